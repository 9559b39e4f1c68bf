//! Kineto's top-level keys: which ones torchtrace reads into [`Meta`], and
//! how.

use super::super::Meta;
use serde_json::Value;

/// The largest top-level value that is parsed for [`Meta`].
const MAX_META_BYTES: usize = 1 << 20;

impl Meta {
    /// Whether [`Meta::absorb`] reads this top-level key. (The scanner
    /// passes over the others without holding their values.)
    pub(crate) fn reads(key: &str) -> bool {
        matches!(
            key,
            "schemaVersion"
                | "baseTimeNanoseconds"
                | "deviceProperties"
                | "distributedInfo"
                | "vllm_version"
                | "with_stack"
                | "displayTimeUnit"
        )
    }

    /// Takes note of one top-level key and its value's raw JSON. (A key
    /// handled here must be listed in [`Meta::reads`] too, or the scanner
    /// passes over its value.)
    pub(crate) fn absorb(&mut self, key: &str, raw: &[u8]) {
        // Real metadata is a few KB; a parsed `Value` takes several times
        // its text, so a huge one is ignored rather than parsed.
        if raw.len() > MAX_META_BYTES {
            return;
        }
        let val = || serde_json::from_slice::<Value>(raw).ok();
        match key {
            "schemaVersion" => self.schema_version = val().and_then(|v| v.as_i64()),
            "baseTimeNanoseconds" => self.base_time_ns = val().and_then(|v| v.as_i64()),
            "deviceProperties" => {
                if let Some(Value::Array(devs)) = val() {
                    self.devices = devs
                        .iter()
                        .filter_map(|d| d.get("name").and_then(Value::as_str))
                        .map(str::to_string)
                        .collect();
                }
            }
            "distributedInfo" => {
                if let Some(v) = val() {
                    self.rank = v.get("rank").and_then(Value::as_i64);
                    self.world_size = v.get("world_size").and_then(Value::as_i64);
                }
            }
            "vllm_version" => {
                self.vllm_version = val().map(|v| match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                })
            }
            "with_stack" => {
                self.with_stack =
                    val().and_then(|v| v.as_bool().or_else(|| v.as_i64().map(|i| i != 0)))
            }
            "displayTimeUnit" => {
                self.display_time_unit = val().and_then(|v| v.as_str().map(str::to_string))
            }
            _ => {}
        }
    }
}
