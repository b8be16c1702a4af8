//! What `modelDescription.xml` says that serving an FMU needs: the FMI version, the token,
//! the co-simulation interface and its capabilities, and the variables.

use std::ops::Range;

use crate::Error;
use crate::wire::VarType;

/// An FMI version this crate serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FmiVersion {
    /// FMI 2.0.
    V2,
    /// FMI 3.0.
    V3,
}

/// One variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variable {
    /// Its name.
    pub name: String,
    /// Its value reference.
    pub vr: u32,
    /// Its type.
    pub var_type: VarType,
    /// Its causality (`parameter`, `input`, `output`, `local`, …).
    pub causality: String,
}

/// The co-simulation interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoSimulation {
    /// The name of the binary, without extension.
    pub model_identifier: String,
    /// `canGetAndSetFMUstate`.
    pub can_get_and_set_state: bool,
    /// `canSerializeFMUstate`.
    pub can_serialize_state: bool,
    /// `canBeInstantiatedOnlyOncePerProcess`.
    pub once_per_process: bool,
    /// Where its element is in the text.
    pub range: Range<usize>,
}

/// A parsed `modelDescription.xml`.
#[derive(Clone, Debug)]
pub struct ModelDescription {
    /// The FMI version.
    pub version: FmiVersion,
    /// `guid` (FMI 2.0) or `instantiationToken` (FMI 3.0).
    pub token: String,
    /// `modelName`.
    pub model_name: String,
    /// The co-simulation interface.
    pub co_simulation: CoSimulation,
    /// Where the model-exchange element is in the text, when there is one.
    pub model_exchange: Option<Range<usize>>,
    /// Where the scheduled-execution element (FMI 3.0) is in the text, when there is one.
    pub scheduled_execution: Option<Range<usize>>,
    /// The variables, in the order of the file.
    pub variables: Vec<Variable>,
}

impl ModelDescription {
    /// Parses `text`.
    ///
    /// # Errors
    /// When it is not XML, not FMI 2.0 or 3.0, or has no co-simulation interface (a
    /// model-exchange-only FMU), or a variable lacks a name, reference or type.
    pub fn parse(text: &str) -> Result<ModelDescription, Error> {
        let doc = roxmltree::Document::parse(text)
            .map_err(|e| Error::new(format!("modelDescription.xml is not XML: {e}")))?;
        let root = doc.root_element();
        let version = match root.attribute("fmiVersion") {
            Some("2.0") => FmiVersion::V2,
            Some(v) if v.starts_with("3.") => FmiVersion::V3,
            other => {
                return Err(Error::new(format!(
                    "fmiVersion {other:?}: FMUs of FMI 2.0 and 3.0 are served"
                )));
            }
        };
        let token_attr = match version {
            FmiVersion::V2 => "guid",
            FmiVersion::V3 => "instantiationToken",
        };
        let token = root
            .attribute(token_attr)
            .ok_or_else(|| Error::new(format!("modelDescription.xml has no {token_attr}")))?;
        let element = |name: &str| root.children().find(|n| n.has_tag_name(name));
        let cs = element("CoSimulation").ok_or_else(|| {
            Error::new(
                "the FMU has no co-simulation interface (model exchange only): only co-simulation \
                 is served out of process",
            )
        })?;
        let flag = |name: &str| cs.attribute(name) == Some("true");
        let co_simulation = CoSimulation {
            model_identifier: cs
                .attribute("modelIdentifier")
                .ok_or_else(|| Error::new("<CoSimulation> has no modelIdentifier"))?
                .to_owned(),
            can_get_and_set_state: flag("canGetAndSetFMUstate"),
            can_serialize_state: flag("canSerializeFMUstate"),
            once_per_process: flag("canBeInstantiatedOnlyOncePerProcess"),
            range: cs.range(),
        };
        let model_exchange = element("ModelExchange").map(|n| n.range());
        let scheduled_execution = element("ScheduledExecution").map(|n| n.range());
        let variables = match version {
            FmiVersion::V2 => variables_v2(element("ModelVariables"))?,
            FmiVersion::V3 => variables_v3(element("ModelVariables"))?,
        };
        Ok(ModelDescription {
            version,
            token: token.to_owned(),
            model_name: root.attribute("modelName").unwrap_or("").to_owned(),
            co_simulation,
            model_exchange,
            scheduled_execution,
            variables,
        })
    }

    /// The references of the variables of `var_type`, with causality `output` when
    /// `outputs_only`.
    pub fn references(&self, var_type: VarType, outputs_only: bool) -> Vec<i64> {
        self.variables
            .iter()
            .filter(|v| v.var_type == var_type && (!outputs_only || v.causality == "output"))
            .map(|v| i64::from(v.vr))
            .collect()
    }
}

fn vr_of(node: roxmltree::Node<'_, '_>, name: &str) -> Result<u32, Error> {
    node.attribute("valueReference")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| Error::new(format!("variable {name:?} has no valueReference")))
}

fn variables_v2(list: Option<roxmltree::Node<'_, '_>>) -> Result<Vec<Variable>, Error> {
    let mut out = Vec::new();
    for sv in list.iter().flat_map(|l| l.children()).filter(|n| n.has_tag_name("ScalarVariable")) {
        let name = sv.attribute("name").unwrap_or("").to_owned();
        let var_type = sv
            .children()
            .find_map(|n| match n.tag_name().name() {
                "Real" => Some(VarType::Real),
                "Integer" | "Enumeration" => Some(VarType::Integer),
                "Boolean" => Some(VarType::Boolean),
                "String" => Some(VarType::String),
                _ => None,
            })
            .ok_or_else(|| Error::new(format!("variable {name:?} has no type")))?;
        out.push(Variable {
            vr: vr_of(sv, &name)?,
            causality: sv.attribute("causality").unwrap_or("local").to_owned(),
            name,
            var_type,
        });
    }
    Ok(out)
}

fn variables_v3(list: Option<roxmltree::Node<'_, '_>>) -> Result<Vec<Variable>, Error> {
    let mut out = Vec::new();
    for node in list.iter().flat_map(|l| l.children()).filter(|n| n.is_element()) {
        let name = node.attribute("name").unwrap_or("").to_owned();
        let var_type = match node.tag_name().name() {
            "Float64" => VarType::Real,
            "Int32" => VarType::Integer,
            "Boolean" => VarType::Boolean,
            "String" => VarType::String,
            other => {
                return Err(Error::new(format!(
                    "variable {name:?} is {other}: of FMI 3.0, Float64, Int32, Boolean and String \
                     variables are served"
                )));
            }
        };
        if node.children().any(|c| c.has_tag_name("Dimension")) {
            return Err(Error::new(format!("variable {name:?} is an array: scalars are served")));
        }
        out.push(Variable {
            vr: vr_of(node, &name)?,
            causality: node.attribute("causality").unwrap_or("local").to_owned(),
            name,
            var_type,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MD: &str = r#"<?xml version="1.0"?>
<fmiModelDescription fmiVersion="2.0" modelName="m" guid="{g}">
  <ModelExchange modelIdentifier="m"/>
  <CoSimulation modelIdentifier="m" canGetAndSetFMUstate="true"
      canBeInstantiatedOnlyOncePerProcess="true"/>
  <ModelVariables>
    <ScalarVariable name="x" valueReference="1" causality="output"><Real/></ScalarVariable>
    <ScalarVariable name="k" valueReference="2" causality="parameter"><Real start="1"/></ScalarVariable>
    <ScalarVariable name="n" valueReference="1" causality="output"><Integer/></ScalarVariable>
  </ModelVariables>
</fmiModelDescription>"#;

    #[test]
    fn parses_the_interface_and_variables() {
        let md = ModelDescription::parse(MD).unwrap();
        assert_eq!(md.version, FmiVersion::V2);
        assert_eq!(md.token, "{g}");
        assert!(md.co_simulation.can_get_and_set_state && md.co_simulation.once_per_process);
        assert!(!md.co_simulation.can_serialize_state);
        assert!(MD[md.model_exchange.clone().unwrap()].starts_with("<ModelExchange"));
        assert_eq!(md.references(VarType::Real, true), [1]);
        assert_eq!(md.references(VarType::Real, false), [1, 2]);
        assert_eq!(md.references(VarType::Integer, true), [1]);
    }

    #[test]
    fn parses_fmi3_and_refuses_the_types_not_served() {
        let md = r#"<fmiModelDescription fmiVersion="3.0" modelName="m" instantiationToken="{t}">
  <CoSimulation modelIdentifier="m"/><ScheduledExecution modelIdentifier="m"/>
  <ModelVariables>
    <Float64 name="x" valueReference="1" causality="output"/>
    <Int32 name="n" valueReference="2" causality="output"/>
    <Boolean name="b" valueReference="3"/>
  </ModelVariables>
</fmiModelDescription>"#;
        let parsed = ModelDescription::parse(md).unwrap();
        assert_eq!(parsed.version, FmiVersion::V3);
        assert_eq!(parsed.token, "{t}");
        assert!(parsed.scheduled_execution.is_some());
        assert_eq!(parsed.references(VarType::Integer, true), [2]);
        let float32 = md.replace("<Int32", "<Float32");
        let err = ModelDescription::parse(&float32).unwrap_err().to_string();
        assert!(err.contains("Float32"), "{err}");
        let array = md.replace(
            r#"<Boolean name="b" valueReference="3"/>"#,
            r#"<Float64 name="a" valueReference="3"><Dimension start="2"/></Float64>"#,
        );
        assert!(ModelDescription::parse(&array).is_err());
    }

    #[test]
    fn refuses_model_exchange_only_and_other_versions() {
        let me_only = MD.replace("<CoSimulation", "<Other");
        let err = ModelDescription::parse(&me_only).unwrap_err().to_string();
        assert!(err.contains("model exchange only"), "{err}");
        let v1 = MD.replace("fmiVersion=\"2.0\"", "fmiVersion=\"1.0\"");
        assert!(ModelDescription::parse(&v1).unwrap_err().to_string().contains("1.0"));
    }
}
