//! A tiny XML well-formedness checker for tests (elements, attributes,
//! text, the five predefined entities and numeric references; no DTDs).
//! Not a general parser: enough to prove a document is well formed and to
//! read its tree back.

#![allow(dead_code)]

/// An element.
#[derive(Debug, Default)]
pub struct Element {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Element>,
    pub text: String,
}

impl Element {
    pub fn attr(&self, k: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }
}

fn decode(s: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = s;
    for _ in 0..=s.len() {
        let Some(i) = rest.find('&') else {
            break;
        };
        out.push_str(&rest[..i]);
        let end = rest[i..].find(';').ok_or("unterminated entity")? + i;
        let ent = &rest[i + 1..end];
        let c = match ent {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            _ if ent.starts_with("#x") => {
                char::from_u32(u32::from_str_radix(&ent[2..], 16).map_err(|e| e.to_string())?)
                    .ok_or("bad char")?
            }
            _ if ent.starts_with('#') => {
                char::from_u32(ent[1..].parse().map_err(|_| "bad ref")?).ok_or("bad char")?
            }
            _ => return Err(format!("unknown entity &{ent};")),
        };
        out.push(c);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    if out
        .chars()
        .any(|c| (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r'))
    {
        return Err("control character".into());
    }
    Ok(out)
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
        && !s.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.')
}

fn parse_tag(inner: &str) -> Result<(String, Vec<(String, String)>), String> {
    let inner = inner.trim();
    let name_end = inner.find(char::is_whitespace).unwrap_or(inner.len());
    let name = &inner[..name_end];
    if !is_name(name) {
        return Err(format!("bad element name {name:?}"));
    }
    let mut attrs = Vec::new();
    let mut rest = inner[name_end..].trim_start();
    for _ in 0..=inner.len() {
        if rest.is_empty() {
            break;
        }
        let eq = rest.find('=').ok_or("attribute without =")?;
        let key = rest[..eq].trim();
        if !is_name(key) {
            return Err(format!("bad attribute name {key:?}"));
        }
        let after = rest[eq + 1..].trim_start();
        let q = after.chars().next().ok_or("missing attribute value")?;
        if q != '"' && q != '\'' {
            return Err("unquoted attribute value".into());
        }
        let close = after[1..].find(q).ok_or("unterminated attribute")? + 1;
        let raw = &after[1..close];
        if raw.contains('<') {
            return Err("< in attribute".into());
        }
        if attrs.iter().any(|(k, _): &(String, String)| k == key) {
            return Err(format!("duplicate attribute {key}"));
        }
        attrs.push((key.to_string(), decode(raw)?));
        rest = after[close + 1..].trim_start();
    }
    Ok((name.to_string(), attrs))
}

/// Parses a document with one root element.
pub fn parse(doc: &str) -> Result<Element, String> {
    let mut rest = doc.trim_start();
    if rest.starts_with("<?xml") {
        let end = rest.find("?>").ok_or("unterminated declaration")?;
        rest = rest[end + 2..].trim_start();
    }
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    for _ in 0..=doc.len() {
        if rest.is_empty() {
            break;
        }
        if let Some(after) = rest.strip_prefix('<') {
            let end = after.find('>').ok_or("unterminated tag")?;
            let tag = &after[..end];
            rest = &after[end + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                let el = stack.pop().ok_or("close without open")?;
                if el.name != name.trim() {
                    return Err(format!("</{name}> closes <{}>", el.name));
                }
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None if root.is_none() => root = Some(el),
                    None => return Err("two roots".into()),
                }
            } else {
                let self_closing = tag.ends_with('/');
                let (name, attrs) = parse_tag(tag.trim_end_matches('/'))?;
                let el = Element {
                    name,
                    attrs,
                    ..Element::default()
                };
                if stack.is_empty() && root.is_some() {
                    return Err("two roots".into());
                }
                if self_closing {
                    match stack.last_mut() {
                        Some(parent) => parent.children.push(el),
                        None => root = Some(el),
                    }
                } else {
                    stack.push(el);
                }
            }
        } else {
            let end = rest.find('<').unwrap_or(rest.len());
            let text = &rest[..end];
            if text.contains('>') && text.contains("]]>") {
                return Err("]]> in text".into());
            }
            let decoded = decode(text)?;
            match stack.last_mut() {
                Some(el) => el.text.push_str(&decoded),
                None if decoded.trim().is_empty() => {}
                None => return Err("text outside the root".into()),
            }
            rest = &rest[end..];
        }
    }
    if !stack.is_empty() {
        return Err(format!("<{}> never closed", stack[0].name));
    }
    root.ok_or_else(|| "no root element".into())
}
