//! Why each cluster was or was not selected by a placement: what OCM lacks and
//! `ocm-edge placement get NAME` prints. The hub's scheduler writes it and the admin API carries
//! it to the CLI as is.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What happened to a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Outcome {
    /// In the placement's decisions.
    Selected,
    /// Feasible, but not chosen (rank past numberOfClusters, a spread rule, a misconfiguration).
    NotSelected,
    /// Removed before scoring (cluster sets, predicates, taints, deletion).
    Filtered,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Outcome::Selected => "Selected",
            Outcome::NotSelected => "NotSelected",
            Outcome::Filtered => "Filtered",
        })
    }
}

/// One prioritizer's part of a cluster's score.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScoreTerm {
    /// Prioritizer name (OCM's, e.g. `Balance`, `AddOn/cpuratio/cpuAvailable`).
    pub prioritizer: String,
    /// Its weight.
    pub weight: i32,
    /// Its score in [-100, 100].
    pub score: i64,
}

impl fmt::Display for ScoreTerm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}x{}", self.prioritizer, self.weight, self.score)
    }
}

/// A decision group a selected cluster landed in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupRef {
    /// Group index.
    pub index: i32,
    /// Group name (may be empty).
    pub name: String,
}

impl fmt::Display for GroupRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.name.is_empty() {
            write!(f, "{}", self.index)
        } else {
            write!(f, "{} ({})", self.index, self.name)
        }
    }
}

/// Why one cluster was or was not selected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterExplanation {
    /// Cluster name.
    pub cluster: String,
    /// Selected, not selected or filtered.
    pub outcome: Outcome,
    /// Position by score among the feasible clusters (1 is best); none when filtered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// Total score; none when filtered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<i64>,
    /// The weighted parts of the score.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub terms: Vec<ScoreTerm>,
    /// The decision group, when selected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_group: Option<GroupRef>,
    /// The headline: `selected: rank 1`, `not selected: rank 4, numberOfClusters 3`,
    /// `filtered: taint ...:NoSelect not tolerated`.
    pub reason: String,
    /// Everything else worth knowing (tolerations and until when, stale add-on scores, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl ClusterExplanation {
    /// `score 140 = Balance 1x40 + Steady 1x100`, when scored.
    pub fn score_text(&self) -> Option<String> {
        let score = self.score?;
        if self.terms.is_empty() {
            return Some(format!("score {score}"));
        }
        let terms: Vec<String> = self.terms.iter().map(ToString::to_string).collect();
        Some(format!("score {score} = {}", terms.join(" + ")))
    }

    /// The reason, the score and the notes on one line.
    pub fn details(&self) -> String {
        let mut parts = vec![self.reason.clone()];
        parts.extend(self.score_text());
        parts.extend(self.notes.iter().cloned());
        parts.join("; ")
    }
}

/// A weighted prioritizer as shown in the explanation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrioritizerWeight {
    /// Prioritizer name.
    pub prioritizer: String,
    /// Its weight.
    pub weight: i32,
}

/// Why each cluster was or was not selected by one scheduling pass.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// `namespace/name` of the placement.
    pub placement: String,
    /// The sets the placement could use.
    pub eligible_cluster_sets: Vec<String>,
    /// The prioritizers that ran.
    pub prioritizers: Vec<PrioritizerWeight>,
    /// numberOfClusters (all feasible when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number_of_clusters: Option<i32>,
    /// One entry per known cluster: selected by rank, then not selected by rank, then filtered
    /// by name.
    pub clusters: Vec<ClusterExplanation>,
}

impl Explanation {
    /// Column titles of [`Explanation::rows`].
    pub const HEADERS: [&'static str; 6] = ["CLUSTER", "RESULT", "RANK", "SCORE", "GROUP", "WHY"];

    /// The entry for `cluster`.
    pub fn cluster(&self, cluster: &str) -> Option<&ClusterExplanation> {
        self.clusters.iter().find(|c| c.cluster == cluster)
    }

    /// The names of the clusters with `outcome`, in explanation order.
    pub fn with_outcome(&self, outcome: Outcome) -> Vec<&str> {
        self.clusters
            .iter()
            .filter(|c| c.outcome == outcome)
            .map(|c| c.cluster.as_str())
            .collect()
    }

    /// One row per cluster, for a table under [`Explanation::HEADERS`]. WHY holds the reason
    /// and the notes; the score breakdown is in SCORE.
    pub fn rows(&self) -> Vec<[String; 6]> {
        self.clusters
            .iter()
            .map(|c| {
                let mut why = vec![c.reason.clone()];
                why.extend(c.notes.iter().cloned());
                [
                    c.cluster.clone(),
                    c.outcome.to_string(),
                    c.rank.map_or_else(|| "-".into(), |r| r.to_string()),
                    c.score_text()
                        .map_or_else(|| "-".into(), |s| s.trim_start_matches("score ").into()),
                    c.decision_group
                        .as_ref()
                        .map_or_else(|| "-".into(), ToString::to_string),
                    why.join("; "),
                ]
            })
            .collect()
    }
}

impl fmt::Display for Explanation {
    /// A plain aligned table (the CLI may render [`Explanation::rows`] its own way).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rows = self.rows();
        let mut widths = Self::HEADERS.map(str::len);
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut line = |cells: &[String]| -> fmt::Result {
            let last = cells.len() - 1;
            for (i, cell) in cells.iter().enumerate() {
                if i == last {
                    writeln!(f, "{cell}")?;
                } else {
                    write!(f, "{cell:<width$}  ", width = widths[i])?;
                }
            }
            Ok(())
        };
        line(&Self::HEADERS.map(String::from))?;
        for row in &rows {
            line(row)?;
        }
        Ok(())
    }
}
