//! The crate's modules depend on each other without a cycle: the Go-compatibility helpers, the
//! value conversion and the lexical view of Rego source sit below the modules that use them, so
//! each module can be read (and changed) knowing only the ones beneath it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module of `src/` (file stem) and the other modules its non-test code names through
/// `crate::…` (paths and grouped `use crate::{…}` imports; comments ignored).
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut texts = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
        if path.extension().is_some_and(|e| e == "rs") && stem != "lib" {
            texts.insert(stem, std::fs::read_to_string(&path).unwrap());
        }
    }
    let modules: BTreeSet<String> = texts.keys().cloned().collect();
    texts
        .iter()
        .map(|(module, text)| {
            let code = code_of(text);
            let named = crate_paths(&code)
                .filter(|name| modules.contains(name) && name != module)
                .collect();
            (module.clone(), named)
        })
        .collect()
}

/// The text before the unit tests, without `//` comments.
fn code_of(text: &str) -> String {
    let before_tests = text.split("#[cfg(test)]").next().unwrap_or("");
    before_tests
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first segment of every `crate::a::…` path and of every item of `use crate::{a, b::c}`.
fn crate_paths(code: &str) -> impl Iterator<Item = String> + '_ {
    code.split("crate::").skip(1).flat_map(|rest| {
        let items = match rest.strip_prefix('{') {
            Some(group) => group.split('}').next().unwrap_or("").to_string(),
            None => rest.to_string(),
        };
        let take_first = rest.starts_with('{');
        items
            .split(',')
            .map(|item| {
                item.trim()
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                    .collect::<String>()
            })
            .take(if take_first { usize::MAX } else { 1 })
            .collect::<Vec<_>>()
    })
}

/// A cycle of the graph as `a -> b -> a`, if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<String> {
    fn visit(
        module: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<String> {
        if let Some(at) = path.iter().position(|m| m == module) {
            let mut cycle = path[at..].to_vec();
            cycle.push(module.to_string());
            return Some(cycle.join(" -> "));
        }
        if done.contains(module) {
            return None;
        }
        path.push(module.to_string());
        for next in &graph[module] {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(module.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|module| visit(module, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_module_graph_has_no_cycle() {
    let graph = module_graph();
    assert!(graph.len() > 20, "{graph:?}");
    assert!(graph["template"].contains("analysis"), "{graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!("module cycle: {cycle}\n{graph:#?}");
    }
}

#[test]
fn a_cycle_is_found() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(m, deps)| (m.to_string(), deps.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(find_cycle(&graph).as_deref(), Some("a -> b -> c -> a"));
    let parsed: Vec<String> =
        crate_paths("use crate::{error::E, x}; crate::y::z(); let _ = crate::w;").collect();
    assert_eq!(parsed, ["error", "x", "y", "w"]);
}
