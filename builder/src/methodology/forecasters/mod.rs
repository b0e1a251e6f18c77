//! The forecasters the scorecard puts side by side, and the walk-forward backtest that runs them:
//! the method's point forecast ([`gap_profile`]), the previous method ([`local_trend`]), the
//! two baselines ([`baselines`]), and [`backtest`], which asks each of them before every scored
//! event and outcome.

pub mod backtest;
pub mod baselines;
pub mod gap_profile;
pub mod local_trend;
