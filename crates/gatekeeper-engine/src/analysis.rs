//! Compile-time checks OPA's compiler makes and regorus does not, run over the modules regorus
//! parsed for a template, so a template gator refuses is refused at ingestion here too:
//!
//! - recursion (`rego_recursion_error: rule data.p.f is recursive: data.p.f -> data.p.f`): OPA
//!   refuses any cycle of rule and function references; regorus would overflow its stack on a
//!   recursive function;
//! - calls of functions that do not exist (`rego_type_error: undefined function foo`), of
//!   deprecated built-ins from Rego v1 (`rego_type_error: deprecated built-in function calls
//!   in expression: re_match`), with the wrong number of arguments (`rego_type_error: count:
//!   arity mismatch`) or with a literal argument of the wrong type (`rego_type_error:
//!   startswith: invalid argument(s)`, for the built-ins in [`LITERAL_TYPES`] only; OPA's full
//!   type inference is not reproduced);
//! - built-ins OPA has and the embedded engine does not evaluate (`http.send`, `io.jwt.*`,
//!   `external_data`, …): an explicit `unsupported:` error naming the function;
//! - chains of references deeper than [`MAX_CALL_DEPTH`], a limit of the embedded engine.
//!
//! Errors read like gator's: `<module>:<line>: <code>: <message>`, the template's module named
//! `template` and its package shown as `data.template`, as the constraint framework names them
//! (libs are `template1…`).

use std::collections::{BTreeMap, BTreeSet};

use regorus::unstable::{Expr, Literal, Module, Query, Ref, Rule, RuleHead};

use crate::limits::MAX_CALL_DEPTH;

/// The name of the template's own module in error locations, as the constraint framework
/// names it (libs are `template1`, `template2`, …).
pub(crate) const ENTRY_MODULE: &str = "template";

/// What a rule or function of the policy is.
#[derive(Debug, Clone)]
struct RuleInfo {
    /// `Some(n)` for a function of `n` arguments.
    arity: Option<usize>,
    /// A rule whose value OPA's type checker infers as `any` (one of its definitions has a
    /// value of no static type, or two have different ones): OPA accepts a call of it with
    /// `name()` (its checker lets any call of an `any`-typed name through) and evaluates it as
    /// the rule's value.
    any_type: bool,
}

/// A change to the bytes `start..end` of module `file` that makes regorus evaluate the source
/// as OPA does ([`crate::spanedit`] applies them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceEdit {
    pub(crate) file: String,
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) kind: EditKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EditKind {
    /// The `()` of a call with empty parentheses of a complete rule that OPA accepts (see
    /// [`RuleInfo::any_type`]), dropped so that regorus reads the rule's value.
    Delete,
    /// `lhs op rhs`, written as a call of [`crate::goarith`] so that a built-in error leaves
    /// only the expression undefined.
    Arith {
        op: &'static str,
        lhs: (usize, usize),
        rhs: (usize, usize),
    },
}

/// A reference from one rule to another (the full path of the target).
type Edge = String;

/// Why a template is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// OPA's compiler refuses it too (the text is OPA's error).
    Invalid(String),
    /// It uses something the embedded engine does not evaluate.
    Unsupported(String),
}

impl From<String> for Refusal {
    fn from(text: String) -> Refusal {
        Refusal::Invalid(text)
    }
}

/// Checks the parsed modules of one template; `v1` is the template's Rego version. Returns the
/// source edits (empty-parenthesis calls of complete rules that OPA accepts, arithmetic) the
/// caller applies before regorus evaluates the modules.
pub(crate) fn check(modules: &[Ref<Module>], v1: bool) -> Result<Vec<SourceEdit>, Refusal> {
    let rules = rule_table(modules);
    let entry = modules
        .iter()
        .find(|m| m.package.span.source.file() == ENTRY_MODULE)
        .map(|m| package_path(m));
    let mut graph: BTreeMap<String, Vec<Edge>> = BTreeMap::new();
    let mut edits = Vec::new();
    let mut first_line: BTreeMap<String, (String, u32)> = BTreeMap::new();
    for module in modules {
        let package = package_path(module);
        let aliases = import_aliases(module);
        for rule in &module.policy {
            let Some((name, line)) = rule_name(rule) else {
                continue;
            };
            let path = format!("{package}.{name}");
            let file = module.package.span.source.file().clone();
            first_line
                .entry(path.clone())
                .or_insert((file.clone(), line));
            let mut walker = Walker {
                package: &package,
                aliases: &aliases,
                rules: &rules,
                entry: entry.as_deref(),
                v1,
                locals: locals_of(rule),
                file,
                edges: Vec::new(),
                edits: Vec::new(),
            };
            walker.rule(rule)?;
            graph.entry(path).or_default().extend(walker.edges);
            edits.extend(walker.edits);
        }
    }
    let shown = |path: &str| shown(entry.as_deref(), path);
    check_cycles(&graph, &first_line, &shown)?;
    check_depth(&graph, &first_line, &shown)?;
    Ok(edits)
}

/// A rule path as gator shows it: the template's own package is `data.template`.
fn shown(entry: Option<&str>, path: &str) -> String {
    match entry {
        Some(package) if path.starts_with(&format!("{package}.")) => {
            format!("data.template{}", &path[package.len()..])
        }
        _ => path.to_string(),
    }
}

/// The names of the rules (not functions) of the modules, sorted, each once.
pub(crate) fn rule_names(modules: &[Ref<Module>]) -> Vec<String> {
    let names: BTreeSet<String> = modules
        .iter()
        .flat_map(|m| m.policy.iter())
        .filter(|rule| {
            !matches!(
                rule.as_ref(),
                Rule::Spec {
                    head: RuleHead::Func { .. },
                    ..
                }
            )
        })
        .filter_map(|rule| rule_name(rule).map(|(name, _)| name))
        .collect();
    names.into_iter().collect()
}

/// `data.<package>` of a module.
fn package_path(module: &Module) -> String {
    let parts = ref_path(&module.package.refr).unwrap_or_default();
    format!("data.{}", parts.join("."))
}

/// The path of a ref made of vars, fields and string indexes (`a.b["c"]`).
fn ref_path(expr: &Expr) -> Option<Vec<String>> {
    match expr {
        Expr::Var { span, .. } => Some(vec![span.text().to_string()]),
        Expr::RefDot { refr, field, .. } => {
            let mut path = ref_path(refr)?;
            path.push(field.0.text().to_string());
            Some(path)
        }
        Expr::RefBrack { refr, index, .. } => {
            let mut path = ref_path(refr)?;
            match index.as_ref() {
                Expr::String { value, .. } => {
                    path.push(value.as_string().ok()?.to_string());
                    Some(path)
                }
                _ => Some(path),
            }
        }
        _ => None,
    }
}

/// The rule's name (the first part of its head ref) and line.
fn rule_name(rule: &Rule) -> Option<(String, u32)> {
    let refr = match rule {
        Rule::Spec { head, .. } => match head {
            RuleHead::Compr { refr, .. } | RuleHead::Set { refr, .. } => refr,
            RuleHead::Func { refr, .. } => refr,
        },
        Rule::Default { refr, .. } => refr,
    };
    let path = ref_path(refr)?;
    Some((path.first()?.clone(), refr.span().line))
}

/// The static type of a literal term as OPA's checker sees it (`None`: none without type
/// inference, which this does not reproduce, so taken as `any`).
fn literal_type(expr: &Expr) -> Option<String> {
    let all = |items: &[Ref<Expr>]| -> Option<Vec<String>> {
        items.iter().map(|i| literal_type(i)).collect()
    };
    Some(match expr {
        Expr::String { .. } | Expr::RawString { .. } => "string".to_string(),
        Expr::Number { .. } => "number".to_string(),
        Expr::Bool { .. } => "boolean".to_string(),
        Expr::Null { .. } => "null".to_string(),
        Expr::Array { items, .. } => format!("array<{}>", all(items)?.join(",")),
        Expr::Set { items, .. } => {
            let types: BTreeSet<String> = all(items)?.into_iter().collect();
            format!("set[{}]", types.into_iter().collect::<Vec<_>>().join("|"))
        }
        Expr::Object { fields, .. } => {
            let mut parts = Vec::new();
            for (_, key, value) in fields {
                parts.push(format!("{}:{}", key.span().text(), literal_type(value)?));
            }
            parts.sort();
            format!("object<{}>", parts.join(","))
        }
        _ => return None,
    })
}

/// The static type of one definition of a complete rule: its value, or for a variable the
/// literal its only body assigns it (`h { h := {"a"} }`); `p { … }` is a boolean.
fn definition_type(rule: &Rule) -> Option<String> {
    match rule {
        Rule::Default { value, .. } => literal_type(value),
        Rule::Spec {
            head: RuleHead::Compr { assign, .. },
            bodies,
            ..
        } => {
            let Some(assign) = assign else {
                return Some("boolean".to_string());
            };
            let Expr::Var { span: var, .. } = assign.value.as_ref() else {
                return literal_type(&assign.value);
            };
            let [body] = bodies.as_slice() else {
                return None;
            };
            body.query.stmts.iter().find_map(|stmt| match &stmt.literal {
                Literal::Expr { expr, .. } => match expr.as_ref() {
                    Expr::AssignExpr { lhs, rhs, .. }
                        if matches!(lhs.as_ref(), Expr::Var { span, .. } if span.text() == var.text()) =>
                    {
                        literal_type(rhs)
                    }
                    _ => None,
                },
                _ => None,
            })
        }
        Rule::Spec { .. } => None,
    }
}

/// Every rule and function of the policy by full path (`data.lib.x.f`).
fn rule_table(modules: &[Ref<Module>]) -> BTreeMap<String, RuleInfo> {
    let mut types: BTreeMap<String, BTreeSet<Option<String>>> = BTreeMap::new();
    for module in modules {
        let package = package_path(module);
        for rule in &module.policy {
            if let Some((name, _)) = rule_name(rule) {
                types
                    .entry(format!("{package}.{name}"))
                    .or_default()
                    .insert(definition_type(rule));
            }
        }
    }
    let mut rules = BTreeMap::new();
    for module in modules {
        let package = package_path(module);
        for rule in &module.policy {
            let Some((name, _)) = rule_name(rule) else {
                continue;
            };
            let arity = match rule.as_ref() {
                Rule::Spec {
                    head: RuleHead::Func { args, .. },
                    ..
                } => Some(args.len()),
                Rule::Default { args, .. } if !args.is_empty() => Some(args.len()),
                _ => None,
            };
            let path = format!("{package}.{name}");
            let any_type = types
                .get(&path)
                .is_some_and(|t| t.len() > 1 || t.contains(&None));
            rules.entry(path).or_insert(RuleInfo { arity, any_type });
        }
    }
    rules
}

/// Import aliases: `import data.lib.x.f` → `f` means `data.lib.x.f`; `as y` renames it.
fn import_aliases(module: &Module) -> BTreeMap<String, String> {
    module
        .imports
        .iter()
        .filter_map(|import| {
            let path = ref_path(&import.refr)?;
            if path.first().map(String::as_str) != Some("data") {
                return None;
            }
            let alias = match &import.r#as {
                Some(span) => span.text().to_string(),
                None => path.last()?.clone(),
            };
            Some((alias, path.join(".")))
        })
        .collect()
}

/// Variables a rule declares itself (arguments, `some`, `:=`, `every`), which shadow rules
/// of the same name in its body.
fn locals_of(rule: &Rule) -> BTreeSet<String> {
    let mut locals = BTreeSet::new();
    let Rule::Spec { head, bodies, .. } = rule else {
        return locals;
    };
    if let RuleHead::Func { args, .. } = head {
        for arg in args {
            vars_in(arg, &mut locals);
        }
    }
    for body in bodies {
        declared_in_query(&body.query, &mut locals);
    }
    locals
}

fn declared_in_query(query: &Query, locals: &mut BTreeSet<String>) {
    for stmt in &query.stmts {
        match &stmt.literal {
            Literal::SomeVars { vars, .. } => {
                locals.extend(vars.iter().map(|v| v.text().to_string()));
            }
            Literal::SomeIn { key, value, .. } => {
                if let Some(key) = key {
                    vars_in(key, locals);
                }
                vars_in(value, locals);
            }
            Literal::Every {
                key, value, query, ..
            } => {
                if let Some(key) = key {
                    locals.insert(key.text().to_string());
                }
                locals.insert(value.text().to_string());
                declared_in_query(query, locals);
            }
            Literal::Expr { expr, .. } | Literal::NotExpr { expr, .. } => {
                declared_in_expr(expr, locals);
            }
        }
    }
}

fn declared_in_expr(expr: &Expr, locals: &mut BTreeSet<String>) {
    match expr {
        Expr::AssignExpr {
            op: regorus::unstable::AssignOp::ColEq,
            lhs,
            ..
        } => vars_in(lhs, locals),
        Expr::ArrayCompr { query, .. }
        | Expr::SetCompr { query, .. }
        | Expr::ObjectCompr { query, .. } => declared_in_query(query, locals),
        _ => {}
    }
}

/// Plain variables in a pattern (`x`, `[x, y]`, `{"a": x}`).
fn vars_in(expr: &Expr, out: &mut BTreeSet<String>) {
    match expr {
        Expr::Var { span, .. } => {
            out.insert(span.text().to_string());
        }
        Expr::Array { items, .. } | Expr::Set { items, .. } => {
            items.iter().for_each(|i| vars_in(i, out));
        }
        Expr::Object { fields, .. } => fields.iter().for_each(|(_, _, v)| vars_in(v, out)),
        _ => {}
    }
}

/// Walks one rule, checking calls and collecting its references to other rules.
struct Walker<'a> {
    package: &'a str,
    aliases: &'a BTreeMap<String, String>,
    rules: &'a BTreeMap<String, RuleInfo>,
    /// The package of the template's own module (shown as `data.template`).
    entry: Option<&'a str>,
    v1: bool,
    locals: BTreeSet<String>,
    file: String,
    edges: Vec<Edge>,
    edits: Vec<SourceEdit>,
}

/// What a function name in a call refers to.
enum Callee {
    /// A function or rule of the policy, by full path.
    Policy(String),
    /// A built-in (or unknown) function, by name.
    Builtin(String),
}

impl Walker<'_> {
    fn error(&self, line: u32, code: &str, message: String) -> String {
        format!("{}:{line}: {code}: {message}", self.file)
    }

    fn unsupported(&self, line: u32, message: String) -> Refusal {
        Refusal::Unsupported(format!("{message} ({}:{line})", self.file))
    }

    fn rule(&mut self, rule: &Rule) -> Result<(), Refusal> {
        match rule {
            Rule::Spec { head, bodies, .. } => {
                match head {
                    RuleHead::Compr { refr, assign, .. } => {
                        self.head_ref(refr)?;
                        if let Some(assign) = assign {
                            self.expr(&assign.value)?;
                        }
                    }
                    RuleHead::Set { refr, key, .. } => {
                        self.head_ref(refr)?;
                        if let Some(key) = key {
                            self.expr(key)?;
                        }
                    }
                    RuleHead::Func { args, assign, .. } => {
                        for arg in args {
                            self.expr(arg)?;
                        }
                        if let Some(assign) = assign {
                            self.expr(&assign.value)?;
                        }
                    }
                }
                for body in bodies {
                    if let Some(assign) = &body.assign {
                        self.expr(&assign.value)?;
                    }
                    self.query(&body.query)?;
                }
                Ok(())
            }
            Rule::Default { value, .. } => self.expr(value),
        }
    }

    /// The brackets of a head ref (`p[x]`) may use expressions.
    fn head_ref(&mut self, refr: &Expr) -> Result<(), Refusal> {
        match refr {
            Expr::RefBrack { refr, index, .. } => {
                self.head_ref(refr)?;
                self.expr(index)
            }
            Expr::RefDot { refr, .. } => self.head_ref(refr),
            _ => Ok(()),
        }
    }

    fn query(&mut self, query: &Query) -> Result<(), Refusal> {
        for stmt in &query.stmts {
            match &stmt.literal {
                Literal::SomeVars { .. } => {}
                Literal::SomeIn {
                    key,
                    value,
                    collection,
                    ..
                } => self.membership(key.as_ref(), value, collection)?,
                Literal::Expr { expr, .. } | Literal::NotExpr { expr, .. } => self.expr(expr)?,
                Literal::Every { domain, query, .. } => {
                    self.expr(domain)?;
                    self.query(query)?;
                }
            }
            for with in &stmt.with_mods {
                self.expr(&with.r#as)?;
            }
        }
        Ok(())
    }

    fn expr(&mut self, expr: &Expr) -> Result<(), Refusal> {
        match expr {
            Expr::String { .. }
            | Expr::RawString { .. }
            | Expr::Number { .. }
            | Expr::Bool { .. }
            | Expr::Null { .. } => Ok(()),
            Expr::Var { span, .. } => {
                let name = span.text();
                if !self.locals.contains(name) {
                    self.reference(&[name.to_string()]);
                }
                Ok(())
            }
            Expr::RefDot { .. } | Expr::RefBrack { .. } => {
                if let Some(path) = ref_path(expr)
                    && path.first().is_some_and(|root| !self.locals.contains(root))
                {
                    self.reference(&path);
                }
                self.ref_indexes(expr)
            }
            Expr::Array { items, .. } | Expr::Set { items, .. } => {
                items.iter().try_for_each(|i| self.expr(i))
            }
            Expr::Object { fields, .. } => fields.iter().try_for_each(|(_, k, v)| {
                self.expr(k)?;
                self.expr(v)
            }),
            Expr::ArrayCompr { term, query, .. } | Expr::SetCompr { term, query, .. } => {
                self.expr(term)?;
                self.query(query)
            }
            Expr::ObjectCompr {
                key, value, query, ..
            } => {
                self.expr(key)?;
                self.expr(value)?;
                self.query(query)
            }
            Expr::Call {
                span, fcn, params, ..
            } => {
                self.call(span, fcn, params)?;
                params.iter().try_for_each(|p| self.expr(p))
            }
            Expr::UnaryExpr { expr, .. } => self.expr(expr),
            Expr::ArithExpr {
                span, op, lhs, rhs, ..
            } => {
                let range = |e: &Expr| (e.span().start as usize, e.span().end as usize);
                self.edits.push(SourceEdit {
                    file: self.file.clone(),
                    start: span.start as usize,
                    end: span.end as usize,
                    kind: EditKind::Arith {
                        op: crate::goarith::op_text(op),
                        lhs: range(lhs),
                        rhs: range(rhs),
                    },
                });
                self.expr(lhs)?;
                self.expr(rhs)
            }
            Expr::BinExpr { lhs, rhs, .. }
            | Expr::BoolExpr { lhs, rhs, .. }
            | Expr::AssignExpr { lhs, rhs, .. } => {
                self.expr(lhs)?;
                self.expr(rhs)
            }
            Expr::Membership {
                key,
                value,
                collection,
                ..
            } => self.membership(key.as_ref(), value, collection),
        }
    }

    /// `key, value in collection` (a `some … in` or a membership test).
    fn membership(
        &mut self,
        key: Option<&Ref<Expr>>,
        value: &Expr,
        collection: &Expr,
    ) -> Result<(), Refusal> {
        if let Some(key) = key {
            self.expr(key)?;
        }
        self.expr(value)?;
        self.expr(collection)
    }

    /// Index expressions inside a ref (`a[f(x)].b`).
    fn ref_indexes(&mut self, expr: &Expr) -> Result<(), Refusal> {
        match expr {
            Expr::RefDot { refr, .. } => self.ref_indexes(refr),
            Expr::RefBrack { refr, index, .. } => {
                self.ref_indexes(refr)?;
                match index.as_ref() {
                    Expr::String { .. } => Ok(()),
                    other => self.expr(other),
                }
            }
            Expr::Var { .. } => Ok(()),
            other => self.expr(other),
        }
    }

    /// The full `data` path a ref names, through the package and the import aliases; `None`
    /// for `input` refs.
    fn full_path(&self, path: &[String]) -> Option<Vec<String>> {
        Some(match path.first().map(String::as_str) {
            Some("data") => path.to_vec(),
            Some("input") | None => return None,
            Some(root) => match self.aliases.get(root) {
                Some(target) => target
                    .split('.')
                    .map(str::to_string)
                    .chain(path[1..].iter().cloned())
                    .collect(),
                None => self
                    .package
                    .split('.')
                    .map(str::to_string)
                    .chain(path.iter().cloned())
                    .collect(),
            },
        })
    }

    /// The policy rule a ref path reaches, if any (the longest prefix naming a rule).
    fn resolve(&self, path: &[String]) -> Option<String> {
        let full = self.full_path(path)?;
        (1..=full.len())
            .rev()
            .map(|n| full[..n].join("."))
            .find(|candidate| self.rules.contains_key(candidate))
    }

    fn reference(&mut self, path: &[String]) {
        if let Some(to) = self.resolve(path) {
            self.edges.push(to);
        }
    }

    fn callee(&self, fcn: &Expr) -> Option<Callee> {
        let path = ref_path(fcn)?;
        let policy = self
            .full_path(&path)
            .map(|full| full.join("."))
            .filter(|full| self.rules.contains_key(full));
        Some(match policy {
            Some(rule) => Callee::Policy(rule),
            None => Callee::Builtin(path.join(".")),
        })
    }

    fn call(
        &mut self,
        span: &regorus::unstable::Span,
        fcn: &Expr,
        params: &[Ref<Expr>],
    ) -> Result<(), Refusal> {
        let line = span.line;
        let Some(callee) = self.callee(fcn) else {
            return Ok(());
        };
        match callee {
            Callee::Policy(rule) => {
                let info = self.rules.get(&rule);
                let arity = info.and_then(|r| r.arity);
                if !self.v1
                    && arity.is_none()
                    && params.is_empty()
                    && info.is_some_and(|r| r.any_type)
                {
                    self.edits.push(SourceEdit {
                        file: self.file.clone(),
                        start: fcn.span().end as usize,
                        end: span.end as usize,
                        kind: EditKind::Delete,
                    });
                    self.edges.push(rule);
                    return Ok(());
                }
                // `rule()` names no function in OPA; a zero-argument function (`f() = x`) is
                // one only in Rego v0.
                if arity.is_none() || (self.v1 && arity == Some(0)) {
                    let message = format!("undefined function {}", shown(self.entry, &rule));
                    return Err(self.error(line, "rego_type_error", message).into());
                }
                if let Some(arity) = arity
                    && params.len() != arity
                    && params.len() != arity + 1
                {
                    return Err(self
                        .error(line, "rego_type_error", format!("{rule}: arity mismatch"))
                        .into());
                }
                self.edges.push(rule);
                Ok(())
            }
            Callee::Builtin(name) => self.builtin_call(line, &name, params),
        }
    }

    fn builtin_call(&self, line: u32, name: &str, params: &[Ref<Expr>]) -> Result<(), Refusal> {
        if name == "print" {
            return Ok(());
        }
        let arity = if crate::extensions::provides(name, self.v1) {
            extension_arity(name)
        } else if let Some((_, arity)) = regorus::unstable::BUILTINS.get(name) {
            Some(usize::from(*arity))
        } else {
            return Err(self.unknown_function(line, name));
        };
        if let Some(arity) = arity
            && params.len() != arity
            && params.len() != arity + 1
        {
            return Err(self
                .error(line, "rego_type_error", format!("{name}: arity mismatch"))
                .into());
        }
        if let Some(types) = LITERAL_TYPES.iter().find(|(n, _)| *n == name) {
            for (param, allowed) in params.iter().zip(types.1) {
                if let Some(kind) = literal_kind(param)
                    && !allowed.contains(&kind)
                    && !allowed.contains(&Kind::Any)
                {
                    return Err(self
                        .error(
                            line,
                            "rego_type_error",
                            format!("{name}: invalid argument(s)"),
                        )
                        .into());
                }
            }
        }
        Ok(())
    }

    fn unknown_function(&self, line: u32, name: &str) -> Refusal {
        if crate::deprecated::is_deprecated(name) {
            return self
                .error(
                    line,
                    "rego_type_error",
                    format!("deprecated built-in function calls in expression: {name}"),
                )
                .into();
        }
        if name == "external_data" {
            return self.unsupported(
                line,
                "external_data: Gatekeeper external data providers are not evaluated by the \
                 embedded engine (gator does not register them either)"
                    .to_string(),
            );
        }
        if let Some(namespace) = UNSUPPORTED_NAMESPACES
            .iter()
            .find(|ns| name.starts_with(&format!("{ns}.")) || name == **ns)
        {
            return self.unsupported(
                line,
                format!(
                    "built-in function {name} ({namespace}) is not evaluated by the embedded engine"
                ),
            );
        }
        self.error(
            line,
            "rego_type_error",
            format!("undefined function {name}"),
        )
        .into()
    }
}

/// Namespaces of OPA built-ins the embedded engine does not provide (the regorus features this
/// project builds, plus deliberate omissions such as network access).
const UNSUPPORTED_NAMESPACES: [&str; 15] = [
    "http.send",
    "io.jwt",
    "crypto",
    "graphql",
    "rego",
    "net.lookup_ip_addr",
    "net.cidr_merge",
    "net.cidr_expand",
    "net.cidr_is_valid",
    "net.cidr_intersects",
    "opa.runtime",
    "providers.aws",
    "uuid",
    "json.patch",
    "strings.render_template",
];

fn extension_arity(name: &str) -> Option<usize> {
    match name {
        "numbers.range_step" | crate::goarith::NAME => Some(3),
        _ => crate::deprecated::DEPRECATED
            .iter()
            .find(|d| d.name == name)
            .map(|d| usize::from(d.arity))
            .or(Some(2)),
    }
}

/// The type of a literal argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Any,
    String,
    Number,
    Boolean,
    Null,
    Array,
    Set,
    Object,
}

fn literal_kind(expr: &Expr) -> Option<Kind> {
    Some(match expr {
        Expr::String { .. } | Expr::RawString { .. } => Kind::String,
        Expr::Number { .. } => Kind::Number,
        Expr::Bool { .. } => Kind::Boolean,
        Expr::Null { .. } => Kind::Null,
        Expr::Array { .. } | Expr::ArrayCompr { .. } => Kind::Array,
        Expr::Set { .. } | Expr::SetCompr { .. } => Kind::Set,
        Expr::Object { .. } | Expr::ObjectCompr { .. } => Kind::Object,
        _ => return None,
    })
}

use Kind::{Array as A, Number as N, Object as O, Set as T, String as S};

/// Argument types of common built-ins, for OPA's type check of literal arguments.
const LITERAL_TYPES: &[(&str, &[&[Kind]])] = &[
    ("startswith", &[&[S], &[S]]),
    ("endswith", &[&[S], &[S]]),
    ("contains", &[&[S], &[S]]),
    ("indexof", &[&[S], &[S]]),
    ("lower", &[&[S]]),
    ("upper", &[&[S]]),
    ("trim", &[&[S], &[S]]),
    ("trim_left", &[&[S], &[S]]),
    ("trim_right", &[&[S], &[S]]),
    ("trim_prefix", &[&[S], &[S]]),
    ("trim_suffix", &[&[S], &[S]]),
    ("trim_space", &[&[S]]),
    ("split", &[&[S], &[S]]),
    ("replace", &[&[S], &[S], &[S]]),
    ("substring", &[&[S], &[N], &[N]]),
    ("concat", &[&[S], &[A, T]]),
    ("sprintf", &[&[S], &[A]]),
    ("regex.match", &[&[S], &[S]]),
    ("re_match", &[&[S], &[S]]),
    ("glob.match", &[&[S], &[A, Kind::Null], &[S]]),
    ("count", &[&[S, A, O, T]]),
    ("sum", &[&[A, T]]),
    ("product", &[&[A, T]]),
    ("max", &[&[A, T]]),
    ("min", &[&[A, T]]),
    ("sort", &[&[A, T]]),
    ("abs", &[&[N]]),
    ("ceil", &[&[N]]),
    ("floor", &[&[N]]),
    ("round", &[&[N]]),
    ("format_int", &[&[N], &[N]]),
    ("numbers.range", &[&[N], &[N]]),
    ("units.parse", &[&[S]]),
    ("units.parse_bytes", &[&[S]]),
    ("json.unmarshal", &[&[S]]),
    ("base64.decode", &[&[S]]),
    ("base64.encode", &[&[S]]),
    ("object.get", &[&[O], &[Kind::Any], &[Kind::Any]]),
    ("net.cidr_contains", &[&[S], &[S]]),
    ("time.parse_rfc3339_ns", &[&[S]]),
    ("semver.compare", &[&[S], &[S]]),
    ("any", &[&[A, T]]),
    ("all", &[&[A, T]]),
];

/// Every rule on a cycle is an error; the first one (in path order) is reported, with the
/// cycle as OPA prints it.
fn check_cycles(
    graph: &BTreeMap<String, Vec<Edge>>,
    lines: &BTreeMap<String, (String, u32)>,
    shown: &dyn Fn(&str) -> String,
) -> Result<(), Refusal> {
    for start in graph.keys() {
        if let Some(cycle) = find_cycle(graph, start) {
            let (file, line) = lines.get(start).cloned().unwrap_or_default();
            let cycle: Vec<String> = cycle.iter().map(|p| shown(p)).collect();
            return Err(Refusal::Invalid(format!(
                "{file}:{line}: rego_recursion_error: rule {} is recursive: {}",
                shown(start),
                cycle.join(" -> ")
            )));
        }
    }
    Ok(())
}

/// A path `start -> … -> start`, if there is one (breadth-first, so the shortest).
fn find_cycle(graph: &BTreeMap<String, Vec<Edge>>, start: &str) -> Option<Vec<String>> {
    let mut previous: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.to_string()]);
    let mut seen = BTreeSet::new();
    while let Some(node) = queue.pop_front() {
        for edge in graph.get(&node).into_iter().flatten() {
            if edge == start {
                let mut path = vec![start.to_string()];
                let mut at = node.clone();
                let mut back = vec![];
                while at != start {
                    back.push(at.clone());
                    at = previous
                        .get(&at)
                        .cloned()
                        .unwrap_or_else(|| start.to_string());
                }
                back.reverse();
                path.extend(back);
                path.push(start.to_string());
                return Some(path);
            }
            if seen.insert(edge.clone()) {
                previous.insert(edge.clone(), node.clone());
                queue.push_back(edge.clone());
            }
        }
    }
    None
}

/// The longest reference chain (the graph has no cycles here) must stay within the limit.
fn check_depth(
    graph: &BTreeMap<String, Vec<Edge>>,
    lines: &BTreeMap<String, (String, u32)>,
    shown: &dyn Fn(&str) -> String,
) -> Result<(), Refusal> {
    let mut depth: BTreeMap<String, usize> = BTreeMap::new();
    for start in graph.keys() {
        let d = depth_of(graph, start, &mut depth);
        if d > MAX_CALL_DEPTH {
            let (file, line) = lines.get(start).cloned().unwrap_or_default();
            let start = shown(start);
            return Err(Refusal::Unsupported(format!(
                "rule {start} reaches a chain of {d} rule and function references, over the \
                 embedded engine's limit of {MAX_CALL_DEPTH} ({file}:{line})"
            )));
        }
    }
    Ok(())
}

/// Memoised longest chain from `node`, computed without recursion (the graph may be long).
fn depth_of(
    graph: &BTreeMap<String, Vec<Edge>>,
    node: &str,
    memo: &mut BTreeMap<String, usize>,
) -> usize {
    let mut stack = vec![(node.to_string(), false)];
    while let Some((current, expanded)) = stack.pop() {
        if memo.contains_key(&current) {
            continue;
        }
        let edges = graph.get(&current).map(Vec::as_slice).unwrap_or(&[]);
        if expanded {
            let d = edges
                .iter()
                .map(|e| memo.get(e).copied().unwrap_or(0))
                .max()
                .map_or(1, |m| m + 1);
            memo.insert(current, d);
        } else {
            stack.push((current.clone(), true));
            for edge in edges {
                if !memo.contains_key(edge) {
                    stack.push((edge.clone(), false));
                }
            }
        }
    }
    memo.get(node).copied().unwrap_or(1)
}
