//! The extensions every template engine gets: built-ins whose regorus versions differ from
//! OPA's (`sprintf`, `regex.match`), capped ones (`numbers.range`, `numbers.range_step`) and,
//! for Rego v0 only, the deprecated built-ins. regorus looks extensions up before its own
//! built-ins, so registering one under a built-in's name replaces that built-in for the engine.

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
        crate::gosprintf::NAME | crate::regexmatch::NAME | "numbers.range" | "numbers.range_step"
    ) || (!v1 && crate::deprecated::is_deprecated(name))
}
