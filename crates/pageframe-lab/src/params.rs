//! Experiment parameters and their TOML config files.
//!
//! Each experiment declares its parameters as a list of [`Param`]s with
//! defaults for the run's scale (`Experiment::params`). A config file has one table
//! per experiment, named after it, holding any of that experiment's keys:
//!
//! ```toml
//! [bulk]
//! rounds = 11
//! ```
//!
//! Keys not given keep the scale's default. An unknown table or key, a value
//! of the wrong type or out of range is a one-line [`ConfigError`] naming the
//! key (`bulk.rounds`). [`commented_defaults`] prints the defaults as such a
//! file to start from.
//!
//! Invariant: every value of a [`Params`] is of its parameter's kind and
//! inside its bounds.

use std::fmt::Write;
use thiserror::Error;

/// A bad config file: one line naming the file and the key.
#[derive(Debug, Error, PartialEq)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// The kind and bounds of a parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// An integer in `min..=max`.
    Int {
        /// Smallest allowed.
        min: i64,
        /// Largest allowed.
        max: i64,
    },
    /// A float in `min..=max`.
    Float {
        /// Smallest allowed.
        min: f64,
        /// Largest allowed.
        max: f64,
    },
    /// `true` or `false`.
    Bool,
    /// One of a few names (a string in TOML).
    Choice {
        /// The names allowed.
        options: &'static [&'static str],
    },
}

impl Kind {
    fn describe(self) -> String {
        match self {
            Kind::Int { min, max } => format!("an integer from {min} to {max}"),
            Kind::Float { min, max } => format!("a number from {min} to {max}"),
            Kind::Bool => "true or false".into(),
            Kind::Choice { options } => {
                let quoted: Vec<String> =
                    options.iter().map(|name| format!("\"{name}\"")).collect();
                format!("one of {}", quoted.join(", "))
            }
        }
    }
}

/// A parameter value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// For [`Kind::Int`].
    Int(i64),
    /// For [`Kind::Float`].
    Float(f64),
    /// For [`Kind::Bool`].
    Bool(bool),
    /// For [`Kind::Choice`]: one of its options.
    Choice(&'static str),
}

impl Value {
    fn to_toml(self) -> String {
        match self {
            Value::Int(value) => value.to_string(),
            Value::Float(value) => format!("{value:?}"),
            Value::Bool(value) => value.to_string(),
            Value::Choice(name) => format!("\"{name}\""),
        }
    }
}

impl std::fmt::Display for Value {
    /// The value as the report page shows it (a choice without quotes).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Int(value) => write!(f, "{value}"),
            Value::Float(value) => write!(f, "{value}"),
            Value::Bool(value) => write!(f, "{value}"),
            Value::Choice(name) => write!(f, "{name}"),
        }
    }
}

/// One parameter of an experiment, with its default at the run's scale.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// The TOML key.
    pub key: &'static str,
    /// One line: what it sets.
    pub doc: &'static str,
    /// Kind and bounds.
    pub kind: Kind,
    /// The default at this scale.
    pub default: Value,
}

impl Param {
    /// An integer parameter.
    pub fn int(key: &'static str, doc: &'static str, default: i64, min: i64, max: i64) -> Param {
        Param {
            key,
            doc,
            kind: Kind::Int { min, max },
            default: Value::Int(default),
        }
    }

    /// A float parameter.
    pub fn float(key: &'static str, doc: &'static str, default: f64, min: f64, max: f64) -> Param {
        Param {
            key,
            doc,
            kind: Kind::Float { min, max },
            default: Value::Float(default),
        }
    }

    /// A parameter that takes one of `options` (`default` among them).
    pub fn choice(
        key: &'static str,
        doc: &'static str,
        default: &'static str,
        options: &'static [&'static str],
    ) -> Param {
        Param {
            key,
            doc,
            kind: Kind::Choice { options },
            default: Value::Choice(default),
        }
    }

    /// A boolean parameter.
    pub fn bool(key: &'static str, doc: &'static str, default: bool) -> Param {
        Param {
            key,
            doc,
            kind: Kind::Bool,
            default: Value::Bool(default),
        }
    }
}

/// The parameter values of one run of one experiment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params {
    values: Vec<(&'static str, Value)>,
}

impl Params {
    /// The defaults of `params`.
    pub fn defaults(params: &[Param]) -> Params {
        Params {
            values: params
                .iter()
                .map(|param| (param.key, param.default))
                .collect(),
        }
    }

    /// Every key and value, in declaration order.
    pub fn values(&self) -> &[(&'static str, Value)] {
        &self.values
    }

    fn get(&self, key: &str) -> Option<Value> {
        self.values
            .iter()
            .find(|(name, _)| *name == key)
            .map(|(_, value)| *value)
    }

    /// An integer parameter. Panics if the experiment did not declare `key`
    /// as an integer: a programming error, not an input error.
    pub fn int(&self, key: &str) -> i64 {
        match self.get(key) {
            Some(Value::Int(value)) => value,
            other => panic!("parameter '{key}' is not a declared integer ({other:?})"),
        }
    }

    /// A float parameter (integers are accepted for floats). Panics on an
    /// undeclared key.
    pub fn float(&self, key: &str) -> f64 {
        match self.get(key) {
            Some(Value::Float(value)) => value,
            Some(Value::Int(value)) => value as f64,
            other => panic!("parameter '{key}' is not a declared number ({other:?})"),
        }
    }

    /// A boolean parameter. Panics on an undeclared key.
    pub fn bool(&self, key: &str) -> bool {
        match self.get(key) {
            Some(Value::Bool(value)) => value,
            other => panic!("parameter '{key}' is not a declared boolean ({other:?})"),
        }
    }

    /// A choice parameter: one of its options. Panics on an undeclared key.
    pub fn choice(&self, key: &str) -> &'static str {
        match self.get(key) {
            Some(Value::Choice(name)) => name,
            other => panic!("parameter '{key}' is not a declared choice ({other:?})"),
        }
    }

    fn set(&mut self, key: &str, value: Value) {
        if let Some(slot) = self.values.iter_mut().find(|(name, _)| *name == key) {
            slot.1 = value;
        }
    }
}

/// A parsed config file: the tables it has, by experiment name.
#[derive(Clone, Debug, Default)]
pub struct ConfigFile {
    source: String,
    tables: Vec<(String, toml::Table)>,
}

impl ConfigFile {
    /// Parses a config file's text; `source` names it in errors. Checks the
    /// table names against `experiments`; keys are checked by [`Self::params`].
    pub fn parse(
        source: &str,
        text: &str,
        experiments: &[&str],
    ) -> Result<ConfigFile, ConfigError> {
        let document: toml::Table = text.parse().map_err(|err: toml::de::Error| {
            // The line the error starts on: one more than the newlines
            // before it (`lines()` of the text before a column-0 error
            // counted one line short).
            let line = err.span().map(|span| {
                let before = &text.as_bytes()[..span.start.min(text.len())];
                before.iter().filter(|byte| **byte == b'\n').count() + 1
            });
            let message: Vec<&str> = err
                .message()
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty())
                .collect();
            let message = message.join("; ");
            match line {
                Some(line) => ConfigError(format!("{source}:{line}: {message}")),
                None => ConfigError(format!("{source}: {message}")),
            }
        })?;
        ConfigFile::from_table(source, document, experiments)
    }

    /// A config file from an already parsed document (a sweep spec builds
    /// one per point); the tables are checked as by [`Self::parse`].
    pub fn from_table(
        source: &str,
        document: toml::Table,
        experiments: &[&str],
    ) -> Result<ConfigFile, ConfigError> {
        let mut tables = Vec::new();
        for (name, value) in document {
            let known = experiments.contains(&name.as_str());
            match value {
                toml::Value::Table(table) if known => tables.push((name, table)),
                toml::Value::Table(_) => {
                    return Err(ConfigError(format!(
                        "{source}: unknown experiment table '[{name}]' (known: {})",
                        experiments.join(", ")
                    )))
                }
                _ => {
                    return Err(ConfigError(format!(
                        "{source}: unknown key '{name}' (parameters go in a table per experiment, e.g. [{}])",
                        experiments.first().copied().unwrap_or("bulk")
                    )))
                }
            }
        }
        Ok(ConfigFile {
            source: source.to_string(),
            tables,
        })
    }

    /// The values for `experiment`: its defaults, overridden by its table.
    pub fn params(&self, experiment: &str, declared: &[Param]) -> Result<Params, ConfigError> {
        let mut params = Params::defaults(declared);
        let Some((_, table)) = self.tables.iter().find(|(name, _)| name == experiment) else {
            return Ok(params);
        };
        for (key, value) in table {
            let path = format!("{experiment}.{key}");
            let Some(param) = declared.iter().find(|param| param.key == key) else {
                let known: Vec<&str> = declared.iter().map(|param| param.key).collect();
                return Err(ConfigError(format!(
                    "{}: unknown key '{path}' (known: {})",
                    self.source,
                    if known.is_empty() {
                        "none: this experiment has no parameters yet".to_string()
                    } else {
                        known.join(", ")
                    }
                )));
            };
            let parsed = check(param.kind, value).ok_or_else(|| {
                ConfigError(format!(
                    "{}: bad value for '{path}': expected {}, got {value}",
                    self.source,
                    param.kind.describe()
                ))
            })?;
            params.set(param.key, parsed);
        }
        Ok(params)
    }
}

/// The value if it is of the kind and inside the bounds (an integer given
/// for a float is that float).
pub fn check(kind: Kind, value: &toml::Value) -> Option<Value> {
    match (kind, value) {
        (Kind::Int { min, max }, toml::Value::Integer(value)) => {
            (min..=max).contains(value).then_some(Value::Int(*value))
        }
        (Kind::Float { min, max }, toml::Value::Float(value)) => {
            (value.is_finite() && (min..=max).contains(value)).then_some(Value::Float(*value))
        }
        (Kind::Float { min, max }, toml::Value::Integer(value)) => {
            let value = *value as f64;
            (min..=max).contains(&value).then_some(Value::Float(value))
        }
        (Kind::Bool, toml::Value::Boolean(value)) => Some(Value::Bool(*value)),
        (Kind::Choice { options }, toml::Value::String(value)) => options
            .iter()
            .find(|name| *name == value)
            .map(|name| Value::Choice(name)),
        _ => None,
    }
}

/// The defaults of one experiment as a commented TOML table, ready to edit
/// and pass back with `--config`.
pub fn commented_defaults(experiment: &str, about: &str, scale: &str, params: &[Param]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {experiment}: {about}");
    let _ = writeln!(out, "# Defaults at scale {scale}; keys left out keep them.");
    let _ = writeln!(out, "[{experiment}]");
    if params.is_empty() {
        let _ = writeln!(out, "# (no parameters yet)");
    }
    for param in params {
        let _ = writeln!(out, "# {} ({})", param.doc, param.kind.describe());
        let _ = writeln!(out, "{} = {}", param.key, param.default.to_toml());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared() -> Vec<Param> {
        vec![
            Param::int("rounds", "Timed rounds", 41, 1, 10_000),
            Param::float("share", "A share", 0.5, 0.0, 1.0),
            Param::bool("stats", "Statistics", true),
            Param::choice("pattern", "A pattern", "uniform", &["uniform", "zipf"]),
        ]
    }

    fn params_of(text: &str) -> Result<Params, ConfigError> {
        ConfigFile::parse("my.toml", text, &["bulk", "scaling"])?.params("bulk", &declared())
    }

    #[test]
    fn keys_left_out_keep_their_defaults() {
        let params = params_of("[bulk]\nrounds = 7\n").unwrap();
        assert_eq!(params.int("rounds"), 7);
        assert_eq!(params.float("share"), 0.5);
        assert!(params.bool("stats"));
        assert_eq!(params.choice("pattern"), "uniform");
        assert_eq!(
            params_of("[bulk]\npattern = \"zipf\"\n")
                .unwrap()
                .choice("pattern"),
            "zipf"
        );
        assert_eq!(params_of("").unwrap(), Params::defaults(&declared()));
    }

    #[test]
    fn floats_take_integers() {
        assert_eq!(
            params_of("[bulk]\nshare = 1\n").unwrap().float("share"),
            1.0
        );
    }

    #[test]
    fn errors_name_the_key() {
        let error = |text: &str| params_of(text).unwrap_err().0;
        assert_eq!(
            error("[bulk]\nround = 3\n"),
            "my.toml: unknown key 'bulk.round' (known: rounds, share, stats, pattern)"
        );
        assert_eq!(
            error("[bulk]\npattern = \"normal\"\n"),
            "my.toml: bad value for 'bulk.pattern': expected one of \"uniform\", \"zipf\", got \"normal\""
        );
        assert_eq!(
            error("[bulk]\nrounds = 0\n"),
            "my.toml: bad value for 'bulk.rounds': expected an integer from 1 to 10000, got 0"
        );
        assert_eq!(
            error("[bulk]\nstats = \"yes\"\n"),
            "my.toml: bad value for 'bulk.stats': expected true or false, got \"yes\""
        );
        assert!(error("[blk]\n").contains("unknown experiment table '[blk]'"));
        assert!(error("rounds = 3\n").contains("unknown key 'rounds'"));
        let syntax = error("[bulk]\nrounds = = 3\n");
        assert!(syntax.starts_with("my.toml:2: "), "{syntax}");
        assert!(!syntax.contains('\n'), "{syntax}");
        // An error at a line's first column is on that line (a duplicate
        // key on line 3 was reported on line 2).
        let duplicate = error("[bulk]\nrounds = 3\nrounds = 4\n");
        assert!(duplicate.starts_with("my.toml:3: "), "{duplicate}");
    }

    #[test]
    fn commented_defaults_parse_back_to_the_defaults() {
        let text = commented_defaults("bulk", "about", "quick", &declared());
        assert!(text.contains("# Timed rounds (an integer from 1 to 10000)\nrounds = 41\n"));
        assert_eq!(params_of(&text).unwrap(), Params::defaults(&declared()));
    }
}
