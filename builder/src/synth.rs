//! Synthetic datasets of any size, for scale tests, benches, and for checking that the
//! method's walk-forward coverage lands at its nominal level in a world like the real one.
//!
//! The world is a *selection world*: each company has a latent log value that follows a random
//! walk with drift, and it reports an event (a round, a tender, ...) more readily after its
//! value has risen since its last event, as real companies raise after good news. So most
//! observed moves are up, by an amount that depends little on the gap, while the latent value
//! itself drifts slowly: the pattern docs/design.md section 3 describes and v0.3.0 is built for. An
//! observed value is the latent one with reporting noise.
//!
//! Deterministic per seed: the same options give the same files, byte for byte.

use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use crate::dataset::{EventType, Sector};
use marks_format::rules::day::Day;

/// How the synthetic world moves and reports.
#[derive(Clone, Debug)]
pub struct SelectionWorld {
    /// Mean change of the latent log value per year.
    pub drift_per_year: f64,
    /// Standard deviation of the latent log value's change per sqrt(year).
    pub volatility_per_sqrt_year: f64,
    /// How strongly a rise invites a report: the daily chance of an event is multiplied by
    /// exp(selection x z - selection^2 / 2), z the latent change since the last event in
    /// standard deviations (so the factor has mean one).
    pub selection: f64,
    /// Standard deviation of a reported value around the latent one (log units).
    pub reporting_noise: f64,
    /// The same for a listing price.
    pub listing_noise: f64,
}

impl Default for SelectionWorld {
    fn default() -> SelectionWorld {
        SelectionWorld {
            drift_per_year: 0.10,
            volatility_per_sqrt_year: 0.45,
            selection: 1.0,
            reporting_noise: 0.10,
            listing_noise: 0.10,
        }
    }
}

#[derive(Clone, Debug)]
pub struct SynthOptions {
    pub companies: usize,
    /// Total events across all companies (listings included), approximately: the count of a
    /// company's events is random, since when it reports depends on how its value moved.
    pub events: usize,
    pub seed: u64,
    pub as_of: Day,
    /// Share of companies that end with a listing.
    pub listed_share: f64,
    /// Oldest and newest first-event ages, in days before `as_of`.
    pub history_days: (i32, i32),
    pub world: SelectionWorld,
}

impl SynthOptions {
    pub fn new(companies: usize, seed: u64) -> SynthOptions {
        SynthOptions {
            companies,
            events: companies * 8,
            seed,
            as_of: Day::parse("2026-06-30").unwrap_or(Day(2_461_222)),
            listed_share: 0.1,
            history_days: (365, 3650),
            world: SelectionWorld::default(),
        }
    }
}

#[derive(Debug)]
pub struct SynthReport {
    pub companies: usize,
    pub events: usize,
}

/// The first guess at how much the base rate of events must exceed target / span for the
/// count to reach the target under selection (measured on the default world); `generate`
/// corrects it from a first pass.
const SELECTION_RATE_CORRECTION: f64 = 1.7;

/// Event types of reported rises, with their shares; a fall is reported as a down round.
const RISE_TYPES: [(EventType, f64); 4] = [
    (EventType::PrimaryRound, 0.60),
    (EventType::TenderOffer, 0.15),
    (EventType::SecondarySale, 0.20),
    (EventType::Acquisition, 0.05),
];

fn pick_rise_type(rng: &mut ChaCha8Rng) -> EventType {
    let mut roll: f64 = rng.gen();
    for (event_type, share) in RISE_TYPES {
        if roll < share {
            return event_type;
        }
        roll -= share;
    }
    EventType::PrimaryRound
}

fn normal(sd: f64) -> Normal<f64> {
    Normal::new(0.0, sd.max(0.0)).unwrap_or_else(|_| unreachable!("sd is finite and non-negative"))
}

/// One company's reported history, (day, type, value in dollars) in date order, and its latent
/// log value on the last day.
fn company_history(
    rng: &mut ChaCha8Rng,
    world: &SelectionWorld,
    start: Day,
    last_private: Day,
    target_events: f64,
    rate_correction: f64,
) -> (Vec<(Day, EventType, f64)>, f64) {
    let dt = 1.0 / crate::methodology::DAYS_PER_YEAR;
    let daily_sd = world.volatility_per_sqrt_year * dt.sqrt();
    let step = normal(daily_sd);
    let daily_drift = world.drift_per_year * dt;
    // exp(s z - s^2/2) has mean one for a standard normal z, so selection moves events
    // towards rises without changing how many there are on average.
    let normaliser = 0.5 * world.selection * world.selection;
    let span = last_private.days_since(start).max(1);
    let base = rate_correction * (target_events - 1.0).max(0.0) / f64::from(span);
    let noise = normal(world.reporting_noise);
    let mut latent: f64 = rng.gen_range((5.0e7f64).ln()..(5.0e10f64).ln());
    let mut history = vec![(start, EventType::PrimaryRound, (latent + noise.sample(rng)).exp())];
    let (mut latent_at_last, mut days_since_last, mut last_reported) = (latent, 0.0, history[0].2);
    let mut day = start;
    while day < last_private {
        day = day.plus(1);
        latent += daily_drift + step.sample(rng);
        days_since_last += 1.0;
        // How unusual the rise since the last event is: the latent change in standard deviations.
        let rise = (latent - latent_at_last - daily_drift * days_since_last) / (daily_sd * days_since_last.sqrt());
        let selection = (world.selection * rise - normaliser).exp();
        if rng.gen::<f64>() < (base * selection).min(1.0) {
            let reported = (latent + noise.sample(rng)).exp();
            let event_type = if reported < last_reported {
                EventType::DownRound
            } else {
                pick_rise_type(rng)
            };
            history.push((day, event_type, reported));
            (latent_at_last, days_since_last, last_reported) = (latent, 0.0, reported);
        }
    }
    (history, latent)
}

/// One synthetic company before it is written.
struct SyntheticCompany {
    sector: Sector,
    listed: bool,
    history: Vec<(Day, EventType, f64)>,
}

/// Every company of the world, with the base rate of events multiplied by `rate_correction`.
fn simulate(options: &SynthOptions, rate_correction: f64) -> Vec<SyntheticCompany> {
    let world = &options.world;
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let per_company = (options.events as f64 / options.companies.max(1) as f64).max(1.0);
    (0..options.companies)
        .map(|_| {
            let sector = Sector::ALL[rng.gen_range(0..Sector::ALL.len())];
            let target = per_company * rng.gen_range(0.5..1.5);
            let age = rng.gen_range(options.history_days.0..=options.history_days.1).max(2);
            let start = options.as_of.plus(-age);
            // A listing strictly after the first event, within the last year.
            let listing = rng
                .gen_bool(options.listed_share.clamp(0.0, 1.0))
                .then(|| options.as_of.plus(-rng.gen_range(0..age.clamp(1, 365))));
            let last_private = listing.map_or(options.as_of, |l| l.plus(-1));
            let private_target = target - f64::from(u8::from(listing.is_some()));
            let (mut history, latent) =
                company_history(&mut rng, world, start, last_private, private_target, rate_correction);
            if let Some(listing) = listing {
                // Listings are not selected: a company lists when it is ready, at the market's
                // price.
                let price = latent + normal(world.listing_noise).sample(&mut rng);
                history.push((listing, EventType::Ipo, price.exp()));
            }
            SyntheticCompany {
                sector,
                listed: listing.is_some(),
                history,
            }
        })
        .collect()
}

/// Writes `dataset.toml`, `companies.csv` and `events.csv` into `dir`.
pub fn generate(options: &SynthOptions, dir: &Path) -> std::io::Result<SynthReport> {
    std::fs::create_dir_all(dir)?;
    // How many events a company reports depends on how its value moves (selection spends the
    // chances of a company whose value lags, and keeps it quiet for longer), so a first pass
    // measures the count and the second scales the base rate to land near `options.events`.
    // The count grows about as the rate to the power 0.75.
    let first_pass: usize = simulate(options, SELECTION_RATE_CORRECTION)
        .iter()
        .map(|c| c.history.len())
        .sum();
    let shortfall = options.events.max(1) as f64 / first_pass.max(1) as f64;
    let correction = SELECTION_RATE_CORRECTION * shortfall.powf(1.0 / 0.75).clamp(0.25, 4.0);
    let mut companies = csv::Writer::from_path(dir.join("companies.csv"))?;
    let mut events = csv::Writer::from_path(dir.join("events.csv"))?;
    companies.write_record(["slug", "name", "sector", "status"])?;
    events.write_record([
        "event_id",
        "slug",
        "event_type",
        "occurred_on",
        "valuation_usd",
        "source_url",
        "note",
    ])?;
    let mut written = 0usize;
    for (i, company) in simulate(options, correction).into_iter().enumerate() {
        let slug = format!("synth-{i:06}");
        companies.write_record([
            slug.as_str(),
            &format!("Synthetic Company {i:06}"),
            company.sector.as_str(),
            if company.listed { "ipo_completed" } else { "private" },
        ])?;
        for (day, event_type, value) in company.history {
            let valuation = value.round().clamp(1.0, 9.0e15) as u64;
            written += 1;
            events.write_record([
                format!("s{written:08}").as_str(),
                &slug,
                event_type.as_str(),
                &day.to_string(),
                &valuation.to_string(),
                "https://example.com/synthetic",
                "synthetic event drawn from a selection world",
            ])?;
        }
    }
    companies.flush()?;
    events.flush()?;
    std::fs::write(
        dir.join("dataset.toml"),
        format!(
            "# Synthetic dataset (seed {seed}) drawn from a selection world; not real companies.\n\
             dataset_version = \"{as_of}\"\nas_of = \"{as_of}\"\ndata_mode = \"illustrative\"\nprovenance = \"backtest\"\n\
             disclaimer = \"Synthetic data for testing and benchmarks; not real companies, not investment advice.\"\n",
            seed = options.seed,
            as_of = options.as_of,
        ),
    )?;
    Ok(SynthReport {
        companies: options.companies,
        events: written,
    })
}
