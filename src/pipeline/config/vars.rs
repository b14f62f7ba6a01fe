//! `${NAME}`, `${NAME:-default}` and `$$` in the string values of a pipeline file (see the
//! module docs of [`crate::pipeline::config`]). Substitution happens on parsed values, so a
//! variable can never inject TOML syntax.

use std::collections::HashMap;
use std::path::Path;

use super::ConfigErrorKind;

/// The byte index in `body` (the text after a `${`) of the `}` that closes it: nested `${...}`
/// references in a default are skipped whole, and `$$` is a literal `$`.
fn closing_brace(body: &str) -> Option<usize> {
    let b = body.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            (b'$', Some(b'$')) => i += 1,
            (b'$', Some(b'{')) => {
                depth += 1;
                i += 1;
            }
            (b'}', _) if depth == 0 => return Some(i),
            (b'}', _) => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    None
}

/// Where variables come from.
pub(super) struct Vars<'a> {
    /// The value of `${PIPELINE_DIR}`.
    pub pipeline_dir: &'a Path,
    /// The variables; `None` is the process environment.
    pub vars: Option<&'a HashMap<String, String>>,
}

impl Vars<'_> {
    /// Substitutes the variables in every string of a TOML value (also inside arrays and
    /// tables).
    pub(super) fn expand(&self, value: &mut toml::Value) -> Result<(), ConfigErrorKind> {
        match value {
            toml::Value::String(s) => *s = self.interpolate(s)?,
            toml::Value::Array(items) => {
                for item in items {
                    self.expand(item)?;
                }
            }
            toml::Value::Table(t) => {
                for (_, item) in t.iter_mut() {
                    self.expand(item)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Substitutes `${NAME}`, `${NAME:-default}` and `$$` in a string value.
    pub(super) fn interpolate(&self, text: &str) -> Result<String, ConfigErrorKind> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(pos) = rest.find('$') {
            out.push_str(&rest[..pos]);
            let after = &rest[pos + 1..];
            if let Some(tail) = after.strip_prefix('$') {
                out.push('$');
                rest = tail;
            } else if let Some(body) = after.strip_prefix('{') {
                let end = closing_brace(body).ok_or_else(|| ConfigErrorKind::BadVariable {
                    text: text.to_string(),
                    reason: "missing closing brace".into(),
                })?;
                let inner = &body[..end];
                let (name, default) = match inner.split_once(":-") {
                    Some((n, d)) => (n, Some(d)),
                    None => (inner, None),
                };
                let valid = name
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !valid {
                    return Err(ConfigErrorKind::BadVariable {
                        text: text.to_string(),
                        reason: format!(
                            "{name:?} is not a variable name (letters, digits and _; write $$ for a literal $)"
                        ),
                    });
                }
                let value = self
                    .lookup(name)
                    .filter(|v| default.is_none() || !v.is_empty());
                match (value, default) {
                    (Some(v), _) => out.push_str(&v),
                    // A default may use variables itself: `${A:-${B:-x}}`.
                    (None, Some(d)) => out.push_str(&self.interpolate(d)?),
                    (None, None) => {
                        return Err(ConfigErrorKind::UnsetVariable {
                            name: name.to_string(),
                        })
                    }
                }
                rest = &body[end + 1..];
            } else {
                out.push('$');
                rest = after;
            }
        }
        out.push_str(rest);
        Ok(out)
    }

    fn lookup(&self, name: &str) -> Option<String> {
        if name == "PIPELINE_DIR" {
            return Some(self.pipeline_dir.display().to_string());
        }
        match self.vars {
            Some(vars) => vars.get(name).cloned(),
            None => std::env::var(name).ok(),
        }
    }
}
