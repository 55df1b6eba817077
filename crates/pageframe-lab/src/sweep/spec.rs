//! The sweep spec file and the points it expands to.
//!
//! ```toml
//! experiment = "numa-balancing"
//! scale = "quick"              # default "quick"
//! seeds = [1, 2, 3]            # or a count: seeds = 10 is seeds 1..=10
//! [params]                     # each key: one value, or a list to sweep
//! pattern = ["uniform", "zipf"]
//! [shapes.two-node]            # machine shapes: named sets of the
//! nodes = 2                    # experiment's machine parameters
//! [shapes.four-node]
//! nodes = 4
//! ```
//!
//! The points are the cross product shapes × parameter values × seeds, in
//! that nesting order (seeds innermost; shapes and parameter keys in name
//! order, values in list order). Every point's parameters are checked
//! as a config file's are (kind, bounds, then the experiment's own check)
//! when the spec is read, so a bad spec fails before anything runs.
//!
//! Invariant: every [`Point`] of a [`Sweep`] has checked parameters, and
//! point keys are unique within the sweep.

use crate::experiments::{self, Experiment, RunOptions, Scale};
use crate::params::{self, ConfigFile, Kind, Params, Value};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;
use std::num::NonZeroUsize;

/// The most points one spec may expand to.
pub const MAX_POINTS: usize = 100_000;

/// The longest shape name, in bytes: a name is a label of the table, the
/// plots and every point's key (twice a point), so a 1 MiB spec of one
/// long name and `seeds = 100000` asked for some 200 GB. Names are words
/// like `two-node`.
pub const MAX_SHAPE_NAME_BYTES: usize = 100;

/// A parsed, checked sweep spec.
#[derive(Debug)]
pub struct Sweep {
    /// The experiment every point runs.
    pub experiment: &'static dyn Experiment,
    /// The scale of every run.
    pub scale: Scale,
    /// The swept parameter keys (those given a list of several values), in
    /// name order: the page plots one set per key.
    pub swept: Vec<String>,
    /// The shape names, in name order (empty without shapes).
    pub shapes: Vec<String>,
    /// Every point, in run order.
    pub points: Vec<Point>,
}

/// One deterministic run of a sweep.
#[derive(Clone, Debug)]
pub struct Point {
    /// Unique within the sweep and stable across runs of the same spec:
    /// `shape=...;key=value;...;seed=N`.
    pub key: String,
    /// The seed.
    pub seed: u64,
    /// The machine shape's name, if the spec has shapes.
    pub shape: Option<String>,
    /// The value of each swept key (in [`Sweep::swept`] order), as text.
    pub swept: Vec<(String, String)>,
    /// Every parameter of the run, checked.
    pub params: Params,
}

impl Sweep {
    /// Parses a spec; `source` names it in errors, which are one line.
    pub fn parse(source: &str, text: &str) -> Result<Sweep, String> {
        let mut document: toml::Table = text
            .parse()
            .map_err(|err: toml::de::Error| format!("{source}: {}", one_line(err.message())))?;
        let experiment = match document.remove("experiment") {
            Some(toml::Value::String(name)) => {
                experiments::find(&name).map_err(|err| format!("{source}: {err}"))?
            }
            Some(_) => return Err(format!("{source}: 'experiment' must be a string")),
            None => return Err(format!("{source}: 'experiment' is missing")),
        };
        let scale = match document.remove("scale") {
            None => Scale::Quick,
            Some(toml::Value::String(name)) => Scale::parse(&name).ok_or_else(|| {
                format!("{source}: bad scale '{name}' (expected \"quick\" or \"full\")")
            })?,
            Some(_) => return Err(format!("{source}: 'scale' must be a string")),
        };
        let seeds = seeds(source, document.remove("seeds"))?;
        let params = table(source, "params", document.remove("params"))?;
        let shape_tables = table(source, "shapes", document.remove("shapes"))?;
        if let Some(key) = document.keys().next() {
            return Err(format!(
                "{source}: unknown key '{key}' (known: experiment, scale, seeds, params, shapes)"
            ));
        }
        let declared = experiment.params(scale);
        let mut axes: Vec<(String, Vec<toml::Value>)> = Vec::new();
        for (key, value) in params {
            let values = match value {
                toml::Value::Array(values) if values.is_empty() => {
                    return Err(format!("{source}: params.{key} is an empty list"))
                }
                toml::Value::Array(values) => values,
                single => vec![single],
            };
            // Each value names its points: one listed twice would make two
            // points of one key (the same run twice, one result file). The
            // same value may be written twice differently (`1` and `1.0`,
            // `0.0` and `-0.0` for a float): compared as the run takes it.
            let kind = declared
                .iter()
                .find(|param| param.key == key)
                .map(|param| param.kind);
            let mut seen = HashMap::with_capacity(values.len());
            for value in &values {
                let written = value_text(value);
                if let Some(first) = seen.insert(run_value(kind, value), written.clone()) {
                    let spelled = if first == written {
                        String::new()
                    } else {
                        format!(" (as {first} and {written})")
                    };
                    return Err(format!(
                        "{source}: params.{key} lists {first} twice{spelled}"
                    ));
                }
            }
            axes.push((key, values));
        }
        let mut shapes: Vec<(Option<String>, toml::Table)> = Vec::new();
        for (name, value) in shape_tables {
            if name.len() > MAX_SHAPE_NAME_BYTES {
                let start: String = name.chars().take(20).collect();
                return Err(format!(
                    "{source}: shapes.{start}...: a shape name of {} bytes, more than {MAX_SHAPE_NAME_BYTES}",
                    name.len()
                ));
            }
            match value {
                toml::Value::Table(values) => shapes.push((Some(name), values)),
                _ => return Err(format!("{source}: shapes.{name} must be a table")),
            }
        }
        // Two shapes that give the same values, as the run takes them, would
        // run the same points twice under two names. Found by their text
        // in a map: comparing each shape with every other took seconds for
        // tens of thousands.
        let mut shape_params: HashMap<String, &str> = HashMap::with_capacity(shapes.len());
        for (name, values) in &shapes {
            let params = checked_params(source, experiment, scale, values)?;
            let name = name.as_deref().unwrap_or("");
            if let Some(first) = shape_params.insert(params_text(&params), name) {
                return Err(format!(
                    "{source}: shapes.{first} and shapes.{name} give the same parameters"
                ));
            }
        }
        let shape_names: Vec<String> = shapes.iter().filter_map(|(name, _)| name.clone()).collect();
        if shapes.is_empty() {
            shapes.push((None, toml::Table::new()));
        }
        let combinations = axes
            .iter()
            .try_fold(1usize, |count, (_, values)| count.checked_mul(values.len()));
        let total = combinations
            .and_then(|count| count.checked_mul(shapes.len()))
            .and_then(|count| count.checked_mul(seeds.len()))
            .filter(|total| *total <= MAX_POINTS)
            .ok_or_else(|| {
                format!("{source}: the spec expands to more than {MAX_POINTS} points")
            })?;
        let swept: Vec<String> = axes
            .iter()
            .filter(|(_, values)| values.len() > 1)
            .map(|(key, _)| key.clone())
            .collect();
        let mut points = Vec::with_capacity(total);
        for (shape, shape_values) in &shapes {
            for combination in 0..combinations.unwrap_or(1) {
                let mut chosen = shape_values.clone();
                let mut rest = combination;
                for (key, values) in axes.iter().rev() {
                    if chosen.contains_key(key) {
                        let place = shape.as_deref().unwrap_or("");
                        return Err(format!(
                            "{source}: '{key}' is set both in params and in shapes.{place}"
                        ));
                    }
                    chosen.insert(key.clone(), values[rest % values.len()].clone());
                    rest /= values.len();
                }
                let params = checked_params(source, experiment, scale, &chosen)?;
                let swept_values: Vec<(String, String)> = swept
                    .iter()
                    .map(|key| (key.clone(), value_text(&chosen[key])))
                    .collect();
                for &seed in &seeds {
                    let mut key = String::new();
                    if let Some(shape) = shape {
                        let _ = write!(key, "shape={shape};");
                    }
                    for (name, value) in &swept_values {
                        let _ = write!(key, "{name}={value};");
                    }
                    let _ = write!(key, "seed={seed}");
                    points.push(Point {
                        key,
                        seed,
                        shape: shape.clone(),
                        swept: swept_values.clone(),
                        params: params.clone(),
                    });
                }
            }
        }
        Ok(Sweep {
            experiment,
            scale,
            swept,
            shapes: shape_names,
            points,
        })
    }

    /// The options of `point`'s run on `threads` threads.
    pub fn options(&self, point: &Point, threads: NonZeroUsize) -> RunOptions {
        RunOptions {
            threads,
            ..RunOptions::new(self.scale, point.seed)
        }
    }
}

/// The parameters of one combination, checked like a config file's table.
fn checked_params(
    source: &str,
    experiment: &'static dyn Experiment,
    scale: Scale,
    chosen: &toml::Table,
) -> Result<Params, String> {
    let mut document = toml::Table::new();
    document.insert(
        experiment.name().to_string(),
        toml::Value::Table(chosen.clone()),
    );
    let params = ConfigFile::from_table(source, document, &[experiment.name()])
        .and_then(|file| file.params(experiment.name(), &experiment.params(scale)))
        .map_err(|err| err.to_string())?;
    experiment
        .check(&params)
        .map_err(|err| format!("{source}: {err}"))?;
    Ok(params)
}

/// `seeds = [..]` or `seeds = N` (seeds 1..=N); default `[1]`.
fn seeds(source: &str, value: Option<toml::Value>) -> Result<Vec<u64>, String> {
    let bad = || {
        format!("{source}: 'seeds' must be a count from 1 to {MAX_POINTS} or a list of distinct seeds (integers from 0)")
    };
    let seeds: Vec<u64> = match value {
        None => vec![1],
        Some(toml::Value::Integer(count)) => {
            let count = u64::try_from(count)
                .ok()
                .filter(|count| (1..=MAX_POINTS as u64).contains(count))
                .ok_or_else(bad)?;
            (1..=count).collect()
        }
        Some(toml::Value::Array(values)) => values
            .iter()
            .map(|value| {
                value
                    .as_integer()
                    .and_then(|seed| u64::try_from(seed).ok())
                    .ok_or_else(bad)
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(bad()),
    };
    let mut seen = HashSet::with_capacity(seeds.len());
    let distinct = seeds.iter().all(|seed| seen.insert(*seed));
    if seeds.is_empty() || !distinct {
        return Err(bad());
    }
    Ok(seeds)
}

/// An optional table of the spec.
fn table(source: &str, name: &str, value: Option<toml::Value>) -> Result<toml::Table, String> {
    match value {
        None => Ok(toml::Table::new()),
        Some(toml::Value::Table(table)) => Ok(table),
        Some(_) => Err(format!("{source}: '{name}' must be a table")),
    }
}

/// A parameter value as the table and the page show it (strings unquoted).
fn value_text(value: &toml::Value) -> String {
    match value {
        toml::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A value as the run takes it, as text: checked against the parameter's
/// kind when it is one (a float without the sign of zero), else as written
/// (a bad value is reported once the point is checked).
fn run_value(kind: Option<Kind>, value: &toml::Value) -> String {
    match kind.and_then(|kind| params::check(kind, value)) {
        Some(checked) => checked_text(checked),
        None => value_text(value),
    }
}

/// A checked value as text, equal for values the run takes alike (a float
/// without the sign of zero: `0.0` and `-0.0` are one value).
fn checked_text(value: Value) -> String {
    match value {
        Value::Float(number) => format!("{:?}", number + 0.0),
        other => other.to_string(),
    }
}

/// Every parameter of a run as text, equal exactly when the parameters
/// are (`Params`' `==`).
fn params_text(params: &Params) -> String {
    let mut text = String::new();
    for (key, value) in params.values() {
        let _ = write!(text, "{key}={};", checked_text(*value));
    }
    text
}

/// A multi-line parser message as one line.
fn one_line(message: &str) -> String {
    let lines: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    lines.join("; ")
}
