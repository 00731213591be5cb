//! The scoring every risk check shares (`chain/address_check.rs`, `token_check.rs`,
//! `url_check.rs`, `sanctions_check.rs`, `typed_data_check.rs`, `approvals_check.rs`): a
//! check's table of reason codes with their severity and points ([`ScoreRule`], built with
//! [`rule`]), the findings taken from it ([`Reason`], [`reason_from`]), the score (their
//! points summed, capped at 100: [`rank`]) and its [`Verdict`].
//!
//! Beside it, what the address and token checks share: `contract` reads an EVM address at
//! one block (code, proxy slots, upgrade key, ERC-20 views, the trade simulation) and
//! `address` scores what was read into the address check's answer (`precheck/1`).
//!
//! What this module must not do: use a route file (routes use it, never the reverse), or
//! hold another check's table: each check keeps its own `SCORING`.

use schemars::JsonSchema;
use serde::Serialize;

pub mod address;
pub mod contract;

/// Scores from here are `caution`.
pub const CAUTION_FROM: u32 = 20;
/// Scores from here are `high`.
pub const HIGH_FROM: u32 = 50;

/// How serious a reason is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "PrecheckSeverity")]
pub enum Severity {
    /// Context, no points.
    Info,
    /// Worth knowing.
    Low,
    /// A power or pattern that can hurt holders or callers.
    Medium,
    /// A power or pattern that can take funds or change everything at once.
    High,
}

/// One row of the scoring table.
#[derive(Clone, Copy, Debug)]
pub struct ScoreRule {
    /// Stable reason code.
    pub code: &'static str,
    /// Its severity.
    pub severity: Severity,
    /// Points added to the score.
    pub points: u32,
    /// What it means.
    pub description: &'static str,
}

/// A row of a scoring table (every check's table is made of these).
pub const fn rule(code: &'static str, severity: Severity, points: u32, description: &'static str) -> ScoreRule {
    ScoreRule { code, severity, points, description }
}

/// Overall verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "PrecheckVerdict")]
pub enum Verdict {
    /// Score below 20.
    Low,
    /// Score 20 to 49.
    Caution,
    /// Score 50 or more.
    High,
    /// The code that runs could not be checked.
    Unknown,
}

impl Verdict {
    /// The verdict of a score: `low` below [`CAUTION_FROM`], `caution` from it, `high` from [`HIGH_FROM`].
    pub fn from_score(score: u32) -> Verdict {
        if score >= HIGH_FROM {
            Verdict::High
        } else if score >= CAUTION_FROM {
            Verdict::Caution
        } else {
            Verdict::Low
        }
    }
}

/// Puts `reasons` most serious first and answers their score: the sum of their points,
/// capped at 100 (every check scores this way).
pub fn rank(reasons: &mut [Reason]) -> u32 {
    reasons.sort_by_key(|r| std::cmp::Reverse(r.points));
    reasons.iter().map(|r| r.points).sum::<u32>().min(100)
}

/// The reason `code` of `table`, with `message`; None when the table has no such code.
pub fn reason_from(table: &[ScoreRule], code: &str, message: String) -> Option<Reason> {
    table.iter().find(|r| r.code == code).map(|r| Reason {
        code: r.code.into(),
        severity: r.severity,
        points: r.points,
        message,
    })
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Reason {
    /// Stable code from the scoring table (`upgradeable_single_key`).
    pub code: String,
    /// `info`, `low`, `medium` or `high`.
    pub severity: Severity,
    /// Points this finding adds to the score.
    pub points: u32,
    /// What was found, for a person.
    pub message: String,
}
