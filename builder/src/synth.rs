//! Synthetic datasets of any size, drawn from the methodology's own model with known
//! parameters: for scale tests, benches, and for checking that walk-forward coverage lands at
//! its nominal level when the model is true.
//!
//! Deterministic per seed: the same options give the same files, byte for byte.

use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use crate::dataset::{Day, EventType, Sector};
use crate::methodology::{Dynamics, Params, TrendState};

#[derive(Clone, Debug)]
pub struct SynthOptions {
    pub companies: usize,
    /// Total events across all companies (listings included), approximately.
    pub events: usize,
    pub seed: u64,
    pub as_of: Day,
    /// Share of companies that end with a listing.
    pub listed_share: f64,
    /// Oldest and newest first-event ages, in days before `as_of`.
    pub history_days: (i32, i32),
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
        }
    }
}

#[derive(Debug)]
pub struct SynthReport {
    pub companies: usize,
    pub events: usize,
}

/// The true pooled growth per year of each sector in synthetic data.
pub fn true_sector_growth(sector: Sector) -> f64 {
    0.10 + 0.04 * (sector.index() % 5) as f64
}

const TYPE_MIX: [(EventType, f64); 5] = [
    (EventType::PrimaryRound, 0.55),
    (EventType::TenderOffer, 0.15),
    (EventType::SecondarySale, 0.20),
    (EventType::DownRound, 0.05),
    (EventType::Acquisition, 0.05),
];

fn pick_type(rng: &mut ChaCha8Rng) -> EventType {
    let mut roll: f64 = rng.gen();
    for (event_type, share) in TYPE_MIX {
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

/// Writes `dataset.toml`, `companies.csv` and `events.csv` into `dir`.
pub fn generate(options: &SynthOptions, dir: &Path) -> std::io::Result<SynthReport> {
    std::fs::create_dir_all(dir)?;
    let params = Params::default();
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
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
    let per_company = (options.events as f64 / options.companies.max(1) as f64).max(1.0);
    let mut written = 0usize;
    let mut event_number = 0u64;
    for i in 0..options.companies {
        let slug = format!("synth-{i:06}");
        let sector = Sector::ALL[rng.gen_range(0..Sector::ALL.len())];
        let count = ((per_company * rng.gen_range(0.5..1.5)).round() as usize).max(1);
        let listed = count >= 2 && rng.gen_bool(options.listed_share.clamp(0.0, 1.0));
        let age = rng.gen_range(options.history_days.0..=options.history_days.1);
        let start = options.as_of.plus(-age);
        // A listing day strictly after the first event, and private events strictly between.
        let listing = listed.then(|| options.as_of.plus(-rng.gen_range(0..age.clamp(1, 365))));
        let last_private = listing.map_or(options.as_of, |l| l.plus(-1));
        let private_span = last_private.days_since(start);
        let private_count = count - usize::from(listed);
        let mut days: Vec<Day> = std::iter::once(start)
            .chain((1..private_count).map(|_| {
                if private_span > 0 {
                    start.plus(rng.gen_range(1..=private_span))
                } else {
                    start
                }
            }))
            .collect();
        days.sort();
        days.extend(listing);
        companies.write_record([
            slug.as_str(),
            &format!("Synthetic Company {i:06}"),
            sector.as_str(),
            if listed { "ipo_completed" } else { "private" },
        ])?;
        let mu = true_sector_growth(sector);
        let dynamics = Dynamics::daily(&params, sector);
        let mut state = TrendState {
            level: rng.gen_range((5.0e7f64).ln()..(5.0e10f64).ln()),
            growth: mu + normal(params.growth_volatility).sample(&mut rng),
            cov: [[0.0; 2]; 2],
        };
        let level_noise = normal((params.volatility(sector).powi(2) / crate::methodology::DAYS_PER_YEAR).sqrt());
        let growth_noise = normal(
            (params.growth_volatility.powi(2)
                * (1.0 - (-2.0 * params.growth_reversion_per_year / crate::methodology::DAYS_PER_YEAR).exp()))
            .sqrt(),
        );
        let mut today = start;
        for (k, &day) in days.iter().enumerate() {
            while today < day {
                state.predict(&dynamics, mu);
                state.level += level_noise.sample(&mut rng);
                state.growth += growth_noise.sample(&mut rng);
                today = today.plus(1);
            }
            let is_listing = listed && k == days.len() - 1;
            let (event_type, noise) = if is_listing {
                (EventType::Ipo, 0.05)
            } else {
                let t = pick_type(&mut rng);
                (t, params.noise(t).unwrap_or(0.1))
            };
            let observed = (state.level + normal(noise).sample(&mut rng)).exp();
            let valuation = observed.round().clamp(1.0, 9.0e15) as u64;
            event_number += 1;
            events.write_record([
                format!("s{event_number:08}").as_str(),
                &slug,
                event_type.as_str(),
                &day.to_string(),
                &valuation.to_string(),
                "https://example.com/synthetic",
                "synthetic event drawn from the model",
            ])?;
            written += 1;
        }
    }
    companies.flush()?;
    events.flush()?;
    std::fs::write(
        dir.join("dataset.toml"),
        format!(
            "# Synthetic dataset (seed {seed}) drawn from methodology {version}; not real companies.\n\
             dataset_version = \"{as_of}\"\nas_of = \"{as_of}\"\ndata_mode = \"illustrative\"\nprovenance = \"backtest\"\n\
             disclaimer = \"Synthetic data for testing and benchmarks; not real companies, not investment advice.\"\n",
            seed = options.seed,
            version = crate::methodology::METHODOLOGY_VERSION,
            as_of = options.as_of,
        ),
    )?;
    Ok(SynthReport {
        companies: options.companies,
        events: written,
    })
}
