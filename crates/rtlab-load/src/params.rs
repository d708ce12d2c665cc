//! The `key=value` parameters of a load spec (`udp-flood:rate=100k:payload=64`), read
//! over the load's typed parameters and their defaults.

use crate::LoadError;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Keys whose values are always text, even when they look like numbers.
const TEXT_KEYS: &[&str] =
    &["word", "compiler", "optimization", "name_suffix", "root", "parent", "peer", "target", "transport"];

/// A number with an optional k/M multiplier.
fn number(raw: &str) -> Option<Value> {
    let (digits, factor) = match raw.strip_suffix(['k', 'K']) {
        Some(d) => (d, 1e3),
        None => match raw.strip_suffix('M') {
            Some(d) => (d, 1e6),
            None => (raw, 1.0),
        },
    };
    if factor == 1.0 {
        if let Ok(i) = digits.parse::<i64>() {
            return Some(i.into());
        }
    }
    let x = digits.parse::<f64>().ok()? * factor;
    if !x.is_finite() {
        return None;
    }
    // Whole numbers stay integers so that they fit integer parameters.
    if x.fract() == 0.0 && x.abs() < 9e15 {
        Some((x as i64).into())
    } else {
        serde_json::Number::from_f64(x).map(Value::Number)
    }
}

fn value(load: &str, key: &str, raw: &str) -> Result<Value, LoadError> {
    Ok(match key {
        "argv" => Value::Array(raw.split_whitespace().map(|s| Value::String(s.into())).collect()),
        "files" => Value::Array(raw.split(';').filter(|s| !s.is_empty()).map(|s| Value::String(s.into())).collect()),
        "cpus" => {
            let cpus = rtlab_sys::sched::parse_cpu_list(&raw.replace(';', ","))
                .map_err(|e| LoadError::config(load, e.to_string()))?;
            cpus.into_iter().map(Value::from).collect()
        }
        _ if TEXT_KEYS.contains(&key) => Value::String(raw.into()),
        _ => match raw {
            "max" | "none" => Value::Null,
            "true" | "yes" => Value::Bool(true),
            "false" | "no" => Value::Bool(false),
            _ => number(raw).unwrap_or_else(|| Value::String(raw.into())),
        },
    })
}

/// Builds `P` from the `key=value` parts of a spec over `P`'s defaults.
pub(crate) fn params<P: DeserializeOwned>(load: &str, parts: &[&str]) -> Result<P, LoadError> {
    let mut object = Map::new();
    for part in parts {
        let (key, raw) = part
            .split_once('=')
            .ok_or_else(|| LoadError::config(load, format!("parameter {part:?} is not KEY=VALUE")))?;
        let key = key.trim().replace('-', "_");
        object.insert(key.clone(), value(load, &key, raw.trim())?);
    }
    serde_json::from_value(Value::Object(object))
        .map_err(|e| LoadError::config(load, format!("invalid parameters {:?}: {e}", parts.join(":"))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_values() {
        assert_eq!(number("100k"), Some(100_000.into()));
        assert_eq!(number("2M"), Some(2_000_000.into()));
        assert_eq!(number("1.5"), Some(serde_json::json!(1.5)));
        assert_eq!(number("-5"), Some((-5).into()));
        assert_eq!(number("abc"), None);
        assert_eq!(value("cpu", "cpus", "0;2-3").unwrap(), serde_json::json!([0, 2, 3]));
        assert_eq!(value("udp-flood", "rate", "max").unwrap(), Value::Null);
    }
}
