//! The calendar day every date of the service is: a Julian day number, so that date arithmetic
//! is integer arithmetic, written `YYYY-MM-DD` in every body and file.

use std::fmt;

/// A calendar day, counted as a Julian day number so that date arithmetic is integer arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Day(pub i32);

impl Day {
    /// Parses exactly `YYYY-MM-DD`; anything else (extra spaces, other separators, impossible
    /// dates such as 2025-02-30) is `None`.
    pub fn parse(text: &str) -> Option<Day> {
        let bytes = text.as_bytes();
        if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
            return None;
        }
        let digits = |range: std::ops::Range<usize>| -> Option<u32> {
            text.get(range.clone())
                .filter(|part| part.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|part| part.parse().ok())
        };
        let year = i32::try_from(digits(0..4)?).ok()?;
        let month = time::Month::try_from(u8::try_from(digits(5..7)?).ok()?).ok()?;
        let day = u8::try_from(digits(8..10)?).ok()?;
        let date = time::Date::from_calendar_date(year, month, day).ok()?;
        Some(Day(date.to_julian_day()))
    }

    pub fn date(self) -> time::Date {
        // Every Day is made from a valid date or by adding a few thousand days to one.
        time::Date::from_julian_day(self.0).unwrap_or(time::Date::MIN)
    }

    /// The `YYYY-MM-DD` form without allocating.
    pub fn iso(self) -> [u8; 10] {
        iso_date(self.date())
    }

    pub fn plus(self, days: i32) -> Day {
        Day(self.0 + days)
    }

    pub fn days_since(self, earlier: Day) -> i32 {
        self.0 - earlier.0
    }
}

/// `YYYY-MM-DD` of a calendar date, without allocating: series rendering calls this per point.
pub fn iso_date(date: time::Date) -> [u8; 10] {
    let year = date.year().clamp(0, 9999) as u32;
    let month = u8::from(date.month()) as u32;
    let day = date.day() as u32;
    let digit = |n: u32| b'0' + (n % 10) as u8;
    [
        digit(year / 1000),
        digit(year / 100),
        digit(year / 10),
        digit(year),
        b'-',
        digit(month / 10),
        digit(month),
        b'-',
        digit(day / 10),
        digit(day),
    ]
}

impl fmt::Display for Day {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let iso = self.iso();
        f.write_str(std::str::from_utf8(&iso).map_err(|_| fmt::Error)?)
    }
}

impl serde::Serialize for Day {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let iso = self.iso();
        serializer.serialize_str(std::str::from_utf8(&iso).map_err(serde::ser::Error::custom)?)
    }
}
