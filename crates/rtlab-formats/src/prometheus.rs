//! Prometheus' HTTP query API answers (`/api/v1/query`) as typed vectors: what `rtlab fleet`
//! reads. Only parsing: nothing here talks to a server.
//!
//! An answer is `{"status": "success", "data": {"resultType": "vector", "result": [...]}}`,
//! each element `{"metric": {labels}, "value": [<unix time>, "<value>"]}`, or
//! `{"status": "error", "errorType": ..., "error": ...}`. Values are strings because
//! Prometheus writes `NaN`, `+Inf` and `-Inf`.

use serde::Deserialize;
use std::collections::BTreeMap;

/// An answer that is not what the query API gives.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PrometheusError {
    /// Not the query API's JSON (a web page, another service, a truncated answer).
    #[error("not a Prometheus query API answer: {0}")]
    NotAnAnswer(String),
    /// Prometheus refused the query (`"status": "error"`).
    #[error("Prometheus refused the query ({kind}): {message}")]
    Refused { kind: String, message: String },
    /// A result type other than the one asked for (`vector`, `scalar`).
    #[error("expected a {expected} result, Prometheus answered a {found}")]
    UnexpectedType { expected: &'static str, found: String },
    /// A value or timestamp that is not a number.
    #[error("not a number in a Prometheus answer: {0:?}")]
    BadNumber(String),
}

/// One element of an instant vector: a series' labels (with `__name__` when the query kept
/// it), the evaluation time and the value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub labels: BTreeMap<String, String>,
    /// Unix time in seconds (the query's evaluation time, or the sample's own for
    /// `timestamp(...)` queries: their value).
    pub timestamp: f64,
    pub value: f64,
}

impl Sample {
    /// A label's value, "" when the series has no such label (Prometheus' own convention).
    pub fn label(&self, name: &str) -> &str {
        self.labels.get(name).map(String::as_str).unwrap_or("")
    }
}

#[derive(Deserialize)]
struct Envelope {
    status: String,
    #[serde(default)]
    data: Option<Data>,
    #[serde(default, rename = "errorType")]
    error_type: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: serde_json::Value,
}

#[derive(Deserialize)]
struct RawSample {
    #[serde(default)]
    metric: BTreeMap<String, String>,
    value: (serde_json::Value, String),
}

/// A Prometheus float as the API writes it: "1.5", "NaN", "+Inf", "-Inf".
pub fn parse_value(text: &str) -> Result<f64, PrometheusError> {
    match text {
        "NaN" => Ok(f64::NAN),
        "+Inf" | "Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        _ => text.trim().parse::<f64>().map_err(|_| PrometheusError::BadNumber(text.to_string())),
    }
}

fn parse_timestamp(value: &serde_json::Value) -> Result<f64, PrometheusError> {
    match value {
        serde_json::Value::Number(n) => n.as_f64().ok_or_else(|| PrometheusError::BadNumber(n.to_string())),
        serde_json::Value::String(s) => parse_value(s),
        other => Err(PrometheusError::BadNumber(other.to_string())),
    }
}

fn data_of(body: &str, expected: &'static str) -> Result<serde_json::Value, PrometheusError> {
    let envelope: Envelope = serde_json::from_str(body).map_err(|e| {
        let start: String = body.trim_start().chars().take(40).collect();
        PrometheusError::NotAnAnswer(format!("{e} (the answer begins {start:?})"))
    })?;
    match envelope.status.as_str() {
        "success" => {}
        "error" => {
            return Err(PrometheusError::Refused {
                kind: envelope.error_type.unwrap_or_else(|| "unknown".into()),
                message: envelope.error.unwrap_or_default(),
            })
        }
        other => return Err(PrometheusError::NotAnAnswer(format!("status {other:?}"))),
    }
    let data = envelope.data.ok_or_else(|| PrometheusError::NotAnAnswer("no \"data\"".into()))?;
    if data.result_type != expected {
        return Err(PrometheusError::UnexpectedType { expected, found: data.result_type });
    }
    Ok(data.result)
}

/// The instant vector of a `/api/v1/query` answer.
pub fn parse_vector(body: &str) -> Result<Vec<Sample>, PrometheusError> {
    let result = data_of(body, "vector")?;
    let raw: Vec<RawSample> =
        serde_json::from_value(result).map_err(|e| PrometheusError::NotAnAnswer(format!("vector element: {e}")))?;
    raw.into_iter()
        .map(|r| {
            Ok(Sample { labels: r.metric, timestamp: parse_timestamp(&r.value.0)?, value: parse_value(&r.value.1)? })
        })
        .collect()
}

/// The scalar of a `/api/v1/query` answer (`time()`, `scalar(...)`): (time, value).
pub fn parse_scalar(body: &str) -> Result<(f64, f64), PrometheusError> {
    let result = data_of(body, "scalar")?;
    let (t, v): (serde_json::Value, String) =
        serde_json::from_value(result).map_err(|e| PrometheusError::NotAnAnswer(format!("scalar: {e}")))?;
    Ok((parse_timestamp(&t)?, parse_value(&v)?))
}

/// A label value written inside a PromQL string literal (`"..."`): backslashes and quotes
/// escaped, line breaks as `\n`.
pub fn quote_label_value(value: &str) -> String {
    // PromQL's string escapes for these three are the exposition's.
    format!("\"{}\"", crate::export::openmetrics::escape_label(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vector_answer_gives_labels_times_and_values() {
        let body = r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"__name__":"up","instance":"board-a:9464","job":"rtlab"},"value":[1764196800.123,"1"]},
            {"metric":{"instance":"board-b:9464"},"value":[1764196800,"5.7e-05"]},
            {"metric":{},"value":[1764196800,"NaN"]},
            {"metric":{"instance":"c"},"value":[1764196800,"+Inf"]},
            {"metric":{"instance":"d"},"value":[1764196800,"-Inf"]}]}}"#;
        let v = parse_vector(body).unwrap();
        assert_eq!(v.len(), 5);
        assert_eq!(v[0].label("instance"), "board-a:9464");
        assert_eq!(v[0].label("job"), "rtlab");
        assert_eq!(v[0].label("missing"), "");
        assert_eq!(v[0].timestamp, 1764196800.123);
        assert_eq!(v[0].value, 1.0);
        assert_eq!(v[1].value, 5.7e-05);
        assert!(v[2].value.is_nan());
        assert_eq!(v[3].value, f64::INFINITY);
        assert_eq!(v[4].value, f64::NEG_INFINITY);
    }

    #[test]
    fn an_empty_vector_is_no_samples() {
        assert_eq!(parse_vector(r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#).unwrap(), vec![]);
    }

    #[test]
    fn a_scalar_answer() {
        let body = r#"{"status":"success","data":{"resultType":"scalar","result":[1764196800.5,"1764196800.5"]}}"#;
        assert_eq!(parse_scalar(body).unwrap(), (1764196800.5, 1764196800.5));
    }

    #[test]
    fn a_refusal_names_its_kind_and_message() {
        let body = r#"{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected <EOF>"}"#;
        let e = parse_vector(body).unwrap_err();
        assert_eq!(
            e,
            PrometheusError::Refused { kind: "bad_data".into(), message: "1:5: parse error: unexpected <EOF>".into() }
        );
        assert_eq!(e.to_string(), "Prometheus refused the query (bad_data): 1:5: parse error: unexpected <EOF>");
    }

    #[test]
    fn other_answers_are_refused_without_panicking() {
        for body in [
            "<html><body>Grafana</body></html>",
            "",
            "{}",
            r#"{"status":"success"}"#,
            r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}}"#,
            r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1]}]}}"#,
            r#"{"status":"success","data":{"resultType":"vector","result":{"a":1}}}"#,
            r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#,
            r#"{"status":"warning"}"#,
        ] {
            assert!(parse_vector(body).is_err(), "{body}");
        }
        assert_eq!(
            parse_vector(r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#).unwrap_err().to_string(),
            "expected a vector result, Prometheus answered a matrix"
        );
        assert!(parse_vector("<html>").unwrap_err().to_string().starts_with("not a Prometheus query API answer: "));
    }

    #[test]
    fn label_values_are_quoted_for_promql() {
        assert_eq!(quote_label_value("timer.latency"), "\"timer.latency\"");
        assert_eq!(quote_label_value("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
    }
}
