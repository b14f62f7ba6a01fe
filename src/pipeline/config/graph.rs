//! The graph of a pipeline file: inputs resolved to stages, checked, and the stages put in a
//! topological order.

use std::collections::HashMap;

use super::{ConfigError, ConfigErrorKind, Section, Stage, StageConfig};
use crate::pipeline::{check_inputs, BadInput};

/// A stage between parsing and ordering.
pub(super) struct Pending {
    pub name: String,
    pub line: usize,
    pub config: StageConfig,
    /// The names of its inputs, each with the line of the `inputs` key.
    pub inputs: Vec<(String, usize)>,
}

/// Orders the stages topologically (Kahn's algorithm, ties in declaration order),
/// resolving inputs to indices; refuses unknown inputs, sinks as inputs, duplicates,
/// unused outputs and cycles.
pub(super) fn order(file: &str, pending: Vec<Pending>) -> Result<Vec<Stage>, ConfigError> {
    let index: HashMap<&str, usize> = pending
        .iter()
        .enumerate()
        .map(|(i, p)| (p.name.as_str(), i))
        .collect();
    let known = pending
        .iter()
        .map(|p| p.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let table_of = |p: &Pending| format!("{}.{}", p.config.section(), p.name);

    // Edges: preds[i] = indices of i's inputs (in `inputs` order).
    let mut preds: Vec<Vec<usize>> = Vec::with_capacity(pending.len());
    for p in &pending {
        let list: Vec<Option<usize>> = p
            .inputs
            .iter()
            .map(|(input, _)| index.get(input.as_str()).copied())
            .collect();
        if let Err((k, bad)) =
            check_inputs(&list, |j| pending[j].config.section() == Section::Sinks)
        {
            let (input, line) = &p.inputs[k];
            let input = input.clone();
            let kind = match bad {
                BadInput::Unknown => ConfigErrorKind::UnknownInput {
                    input,
                    known: known.clone(),
                },
                BadInput::Sink => ConfigErrorKind::SinkAsInput { input },
                BadInput::Twice => ConfigErrorKind::DuplicateInput { input },
            };
            return Err(ConfigError::new(
                file,
                Some(*line),
                Some(&table_of(p)),
                Some("inputs"),
                kind,
            ));
        }
        preds.push(list.into_iter().flatten().collect());
    }

    // A cycle first: an unused stage inside a cycle is better explained by the cycle.
    let n = pending.len();
    let mut indegree: Vec<usize> = preds.iter().map(Vec::len).collect();
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, list) in preds.iter().enumerate() {
        for &j in list {
            succs[j].push(i);
        }
    }
    let mut order: Vec<usize> = Vec::with_capacity(n);
    let mut ready: std::collections::BTreeSet<usize> =
        (0..n).filter(|&i| indegree[i] == 0).collect();
    while let Some(i) = ready.pop_first() {
        order.push(i);
        for &k in &succs[i] {
            indegree[k] -= 1;
            if indegree[k] == 0 {
                ready.insert(k);
            }
        }
    }
    if order.len() < n {
        // Walk back along inputs from a stage left over until a stage repeats.
        let left: Vec<bool> = (0..n).map(|i| indegree[i] > 0).collect();
        let mut path: Vec<usize> = Vec::new();
        let mut cur = (0..n).find(|&i| left[i]).unwrap_or(0);
        while !path.contains(&cur) {
            path.push(cur);
            cur = preds[cur].iter().copied().find(|&j| left[j]).unwrap_or(cur);
        }
        let from = path.iter().position(|&i| i == cur).unwrap_or(0);
        let mut cycle: Vec<usize> = path[from..].to_vec();
        cycle.reverse(); // data-flow direction: input -> consumer
        let first = cycle.iter().copied().min().unwrap_or(cur);
        let rot = cycle.iter().position(|&i| i == first).unwrap_or(0);
        cycle.rotate_left(rot);
        let mut names: Vec<String> = cycle.iter().map(|&i| pending[i].name.clone()).collect();
        names.push(pending[first].name.clone());
        let p = &pending[first];
        let line = p.inputs.first().map(|(_, l)| *l).unwrap_or(p.line);
        return Err(ConfigError::new(
            file,
            Some(line),
            Some(&table_of(p)),
            Some("inputs"),
            ConfigErrorKind::Cycle { path: names },
        ));
    }

    for (i, p) in pending.iter().enumerate() {
        if p.config.section() != Section::Sinks && succs[i].is_empty() {
            return Err(ConfigError::new(
                file,
                Some(p.line),
                Some(&table_of(p)),
                None,
                ConfigErrorKind::Unused {
                    name: p.name.clone(),
                },
            ));
        }
    }

    let mut position = vec![0usize; n];
    for (pos, &i) in order.iter().enumerate() {
        position[i] = pos;
    }
    let mut slots: Vec<Option<Pending>> = pending.into_iter().map(Some).collect();
    let mut stages = Vec::with_capacity(n);
    for &i in &order {
        let Some(p) = slots[i].take() else { continue };
        stages.push(Stage {
            name: p.name,
            line: Some(p.line),
            config: p.config,
            inputs: preds[i].iter().map(|&j| position[j]).collect(),
        });
    }
    Ok(stages)
}
