//! The pipeline-file loader on arbitrary text: `PipelineSpec::parse` (TOML with spans,
//! variables, stage tables, the graph) with a fixed set of variables and no file checks;
//! every error must render.
#![no_main]

use std::collections::HashMap;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use weir::unstable::pipeline::config::{LoadOptions, PipelineSpec};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let vars = HashMap::from([
        ("DATA".to_string(), "/data".to_string()),
        ("EMPTY".to_string(), String::new()),
    ]);
    let options = LoadOptions {
        base_dir: Some("/base".into()),
        vars: Some(vars),
        check_paths: false,
    };
    match PipelineSpec::parse(text, "fuzz.toml", Path::new("/pipelines"), &options) {
        Ok(spec) => {
            let _ = spec.validate();
            let _ = format!("{spec:?}");
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
