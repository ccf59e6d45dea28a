//! The extensions every template engine gets: built-ins whose regorus versions differ from
//! OPA's (`sprintf`, `regex.match`, `upper`, `lower`), capped ones (`numbers.range`,
//! `numbers.range_step`) and, for Rego v0 only, the deprecated built-ins. regorus looks
//! extensions up before its own built-ins, so registering one under a built-in's name replaces
//! that built-in for the engine.

use regorus::Value;

/// Registers the extensions on a template's engine (`v1`: the template's Rego version).
pub(crate) fn register(engine: &mut regorus::Engine, v1: bool) -> anyhow::Result<()> {
    engine.add_extension(
        crate::gosprintf::NAME.to_string(),
        2,
        Box::new(crate::gosprintf::extension),
    )?;
    engine.add_extension(
        crate::regexmatch::NAME.to_string(),
        2,
        Box::new(crate::regexmatch::extension),
    )?;
    engine.add_extension(
        crate::goarith::NAME.to_string(),
        3,
        Box::new(crate::goarith::extension),
    )?;
    engine.add_extension("upper".to_string(), 1, Box::new(|p| Ok(go_case(&p, true))))?;
    engine.add_extension("lower".to_string(), 1, Box::new(|p| Ok(go_case(&p, false))))?;
    crate::limits::register(engine)?;
    if !v1 {
        crate::deprecated::register(engine)?;
    }
    Ok(())
}

/// Whether `name` is a function the extensions provide for a module of this Rego version.
pub(crate) fn provides(name: &str, v1: bool) -> bool {
    matches!(
        name,
        crate::gosprintf::NAME
            | crate::regexmatch::NAME
            | crate::goarith::NAME
            | "numbers.range"
            | "numbers.range_step"
    ) || (!v1 && crate::deprecated::is_deprecated(name))
}

/// `upper`/`lower` with Go's one-character case mapping ([`crate::gotext::go_case`]).
fn go_case(params: &[Value], upper: bool) -> Value {
    match params.first() {
        Some(Value::String(text)) => Value::from(crate::gotext::go_case(text, upper)),
        _ => Value::Undefined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_mapping_is_gos_one_character_mapping() {
        let call = |text: &str, upper: bool| go_case(&[Value::from(text)], upper);
        assert_eq!(call("straße", true), Value::from("STRAßE"));
        assert_eq!(call("ÄBC", false), Value::from("äbc"));
        assert_eq!(call("İ", false), Value::from("i"));
        assert_eq!(go_case(&[Value::from(1)], true), Value::Undefined);
    }
}
