//! Office Math (OMML) as LaTeX, in the conventions of docling's converter (itself after
//! dwml): fractions, scripts, radicals, delimiters, n-ary operators, functions, limits,
//! accents, matrices; symbols as LaTeX commands.

use crate::markdown::ooxml::{El, MAX_DEPTH, kids};

/// The LaTeX of one `m:oMath`, white space collapsed.
pub fn latex(math: El) -> String {
    let raw = children(math, 0);
    let mut out = String::with_capacity(raw.len());
    for word in raw.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

fn children(el: El, depth: usize) -> String {
    let mut out = String::new();
    if depth > MAX_DEPTH {
        return out;
    }
    for k in kids(el) {
        if let Some(s) = node(k, depth + 1) {
            out.push_str(&s);
        }
    }
    out
}

fn part(el: El, tag: &str, depth: usize) -> String {
    el.children()
        .find(|c| c.local() == tag && c.name().starts_with("m:"))
        .map(|c| children(c, depth))
        .unwrap_or_default()
}

fn pr<'d>(el: El<'d>, pr: &str, key: &str) -> Option<&'d str> {
    let pr = el.children().find(|c| c.local() == pr)?;
    pr.children().find(|c| c.local() == key).map(|c| c.attr("m:val").unwrap_or(""))
}

fn has_latex_grouping(s: &str) -> bool {
    s.contains("\\frac") || s.contains("\\sqrt")
}

fn node(el: El, depth: usize) -> Option<String> {
    let tag = el.name().strip_prefix("m:")?;
    Some(match tag {
        "r" => run(el),
        "e" | "num" | "den" | "deg" | "box" | "oMath" | "phant" | "borderBox" => children(el, depth),
        "acc" => {
            let e = part(el, "e", depth);
            match pr(el, "accPr", "chr").map(|c| c.chars().next()) {
                None => format!("\\hat{{{e}}}"),
                Some(c) => match c.and_then(accent) {
                    Some(cmd) => format!("\\{cmd}{{{e}}}"),
                    None => e,
                },
            }
        }
        "bar" => {
            let e = part(el, "e", depth);
            match pr(el, "barPr", "pos") {
                Some("bot") => format!("\\underline{{{e}}}"),
                _ => format!("\\overline{{{e}}}"),
            }
        }
        "d" => {
            let delim = |key: &str, default: &str| match pr(el, "dPr", key) {
                None => default.to_string(),
                Some("") => ".".to_string(),
                Some(c) => match c {
                    "{" => "\\{".to_string(),
                    "}" => "\\}".to_string(),
                    other => other.to_string(),
                },
            };
            let (left, right) = (delim("begChr", "("), delim("endChr", ")"));
            let sep = pr(el, "dPr", "sepChr").unwrap_or("|");
            let inner: Vec<String> = el.children().filter(|c| c.is("m:e")).map(|c| children(c, depth)).collect();
            format!("\\left{left}{}\\right{right}", inner.join(sep))
        }
        "sSub" => {
            let base = group(part(el, "e", depth));
            format!("{base}_{{{}}}", part(el, "sub", depth))
        }
        "sSup" => {
            let base = group(part(el, "e", depth));
            format!("{base}^{{{}}}", part(el, "sup", depth))
        }
        "sSubSup" => {
            let base = group(part(el, "e", depth));
            format!("{base}_{{{}}}^{{{}}}", part(el, "sub", depth), part(el, "sup", depth))
        }
        "sPre" => {
            format!("{{}}_{{{}}}^{{{}}}{}", part(el, "sub", depth), part(el, "sup", depth), part(el, "e", depth))
        }
        "sub" => format!("_{{{}}}", children(el, depth)),
        "sup" => format!("^{{{}}}", children(el, depth)),
        "f" => {
            let (num, den) = (part(el, "num", depth), part(el, "den", depth));
            match pr(el, "fPr", "type") {
                Some("skw") => format!("^{{{num}}}/_{{{den}}}"),
                Some("noBar") => format!("\\genfrac{{}}{{}}{{0pt}}{{}}{{{num}}}{{{den}}}"),
                Some("lin") => format!("{{{num}}}/{{{den}}}"),
                _ => format!("\\frac{{{num}}}{{{den}}}"),
            }
        }
        "func" => {
            let name = el.children().find(|c| c.is("m:fName")).map(|f| function_name(f, depth)).unwrap_or_default();
            let name = if name.contains(PLACE) { name } else { format!("{name}{PLACE}") };
            name.replace(PLACE, &part(el, "e", depth))
        }
        "fName" => function_name(el, depth),
        "groupChr" => {
            let e = part(el, "e", depth);
            let c = pr(el, "groupChrPr", "chr").and_then(|c| c.chars().next()).unwrap_or('\u{23df}');
            match group_char(c) {
                Some(cmd) => format!("\\{cmd}{{{e}}}"),
                None => e,
            }
        }
        "rad" => {
            let (e, deg) = (part(el, "e", depth), part(el, "deg", depth));
            if deg.trim().is_empty() { format!("\\sqrt{{{e}}}") } else { format!("\\sqrt[{deg}]{{{e}}}") }
        }
        "eqArr" => {
            let rows: Vec<String> = el.children().filter(|c| c.is("m:e")).map(|c| children(c, depth)).collect();
            rows.join("\\\\")
        }
        "limLow" => {
            let base = part(el, "e", depth);
            let lim = el.children().find(|c| c.is("m:lim")).map(|l| limit(l, depth)).unwrap_or_default();
            match base.trim() {
                "lim" | "max" | "min" => format!("\\{}_{{{lim}}}", base.trim()),
                "argmax" | "argmin" => format!("\\operatorname{{{}}}_{{{lim}}}", base.trim()),
                _ => format!("{base}_{{{lim}}}"),
            }
        }
        "limUpp" => {
            let lim = el.children().find(|c| c.is("m:lim")).map(|l| limit(l, depth)).unwrap_or_default();
            format!("\\overset{{{lim}}}{{{}}}", part(el, "e", depth))
        }
        "lim" => limit(el, depth),
        "m" => {
            let rows: Vec<String> = el
                .children()
                .filter(|c| c.is("m:mr"))
                .map(|row| {
                    row.children().filter(|c| c.is("m:e")).map(|c| children(c, depth)).collect::<Vec<_>>().join("&")
                })
                .collect();
            format!("\\begin{{matrix}}{}\\end{{matrix}}", rows.join("\\\\"))
        }
        "nary" => {
            let mut out = String::new();
            for k in kids(el) {
                if k.is("m:naryPr") {
                    let op = k.children().find(|c| c.is("m:chr")).map(|c| c.attr("m:val").unwrap_or(""));
                    match op.and_then(|o| o.chars().next()) {
                        None => out.push_str("\\int"),
                        Some(c) => match big_operator(c) {
                            Some(cmd) => {
                                out.push('\\');
                                out.push_str(cmd);
                            }
                            None => out.push(c),
                        },
                    }
                } else if let Some(s) = node(k, depth + 1) {
                    out.push_str(&s);
                }
            }
            out
        }
        _ => return None,
    })
}

const PLACE: &str = "{fe}";

fn group(base: String) -> String {
    let base = base.trim_end().to_string();
    if has_latex_grouping(&base) { format!("{{{base}}}") } else { base }
}

fn function_name(el: El, depth: usize) -> String {
    let mut out = String::new();
    for k in kids(el) {
        if k.is("m:r") {
            let name = run(k);
            match name.trim() {
                "sin" | "cos" | "tan" | "arcsin" | "arccos" | "arctan" | "arccot" | "sinh" | "cosh" | "tanh"
                | "coth" | "sec" | "csc" | "max" | "min" | "log" | "ln" | "exp" | "det" | "gcd" | "deg" | "hom"
                | "ker" | "dim" | "arg" | "inf" | "sup" | "lim" | "Pr" => {
                    out.push_str(&format!("\\{}({PLACE})", name.trim()))
                }
                "mod" => out.push_str(&format!("\\mod {PLACE}")),
                _ => out.push_str(&name),
            }
        } else if let Some(s) = node(k, depth + 1) {
            out.push_str(&s);
        }
    }
    out
}

fn limit(el: El, depth: usize) -> String {
    let mut s = children(el, depth).replace("\\rightarrow", "\\to");
    s.truncate(s.trim_end().len());
    if let Some(stripped) = s.strip_suffix("\\\\") {
        s = stripped.trim_end().to_string();
    }
    if !s.is_empty() && !s.contains(['\\', '<', '>', '=', '+', '*', '/', '^', '_', '{', '}']) {
        s = s.replace(' ', "\\ ");
    }
    s
}

fn run(el: El) -> String {
    let mut out = String::new();
    for t in el.children().filter(|c| c.is("m:t")) {
        for c in t.text().chars() {
            symbol(c, &mut out);
        }
    }
    out
}

/// One character of a math run as LaTeX.
fn symbol(c: char, out: &mut String) {
    match c {
        '\u{2013}' | '\u{2014}' | '\u{2212}' => out.push('-'),
        '\u{d7}' => out.push_str("\\times "),
        '{' | '}' | '_' | '#' | '&' | '$' | '%' | '~' => {
            out.push('\\');
            out.push(c);
        }
        '\\' => out.push_str("\\backslash "),
        '<' | '>' => {
            out.push(' ');
            out.push(c);
            out.push(' ');
        }
        '\u{2026}' => out.push_str(" \\text{ \\textellipsis } "),
        c if c.is_ascii() => out.push(c),
        c => {
            if let Some(plain) = math_alphanumeric(c) {
                out.push(plain);
            } else if let Some(cmd) = command(c) {
                out.push_str(" \\");
                out.push_str(cmd);
                out.push(' ');
            } else {
                out.push(c);
            }
        }
    }
}

/// Mathematical italic and bold letters as plain Latin letters.
fn math_alphanumeric(c: char) -> Option<char> {
    let code = c as u32;
    if !(0x1D400..=0x1D6A3).contains(&code) {
        return None;
    }
    let offset = (code - 0x1D400) % 52;
    let base = if offset < 26 { b'A' as u32 + offset } else { b'a' as u32 + offset - 26 };
    char::from_u32(base)
}

fn accent(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{300}' => "grave",
        '\u{301}' => "acute",
        '\u{302}' => "hat",
        '\u{303}' => "tilde",
        '\u{304}' | '\u{305}' => "bar",
        '\u{306}' => "breve",
        '\u{307}' => "dot",
        '\u{308}' => "ddot",
        '\u{30c}' => "check",
        '\u{20d7}' => "vec",
        '\u{20db}' => "dddot",
        '\u{20d6}' => "overleftarrow",
        '\u{20e1}' => "overleftrightarrow",
        _ => return None,
    })
}

fn group_char(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{23de}' => "overbrace",
        '\u{23df}' => "underbrace",
        '\u{23b4}' => "overbracket",
        '\u{23b5}' => "underbracket",
        '\u{23dc}' => "overparen",
        '\u{23dd}' => "underparen",
        _ => return None,
    })
}

fn big_operator(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{2140}' => "Bbbsum",
        '\u{220f}' => "prod",
        '\u{2210}' => "coprod",
        '\u{2211}' => "sum",
        '\u{222b}' => "int",
        '\u{222c}' => "iint",
        '\u{222d}' => "iiint",
        '\u{222e}' => "oint",
        '\u{222f}' => "oiint",
        '\u{2230}' => "oiiint",
        '\u{22c0}' => "bigwedge",
        '\u{22c1}' => "bigvee",
        '\u{22c2}' => "bigcap",
        '\u{22c3}' => "bigcup",
        '\u{2a00}' => "bigodot",
        '\u{2a01}' => "bigoplus",
        '\u{2a02}' => "bigotimes",
        _ => return None,
    })
}

/// LaTeX commands for the symbols equations use most.
fn command(c: char) -> Option<&'static str> {
    Some(match c {
        'α' => "alpha",
        'β' => "beta",
        'γ' => "gamma",
        'δ' => "delta",
        'ε' => "varepsilon",
        'ϵ' => "epsilon",
        'ζ' => "zeta",
        'η' => "eta",
        'θ' => "theta",
        'ϑ' => "vartheta",
        'ι' => "iota",
        'κ' => "kappa",
        'λ' => "lambda",
        'μ' | 'µ' => "mu",
        'ν' => "nu",
        'ξ' => "xi",
        'π' => "pi",
        'ϖ' => "varpi",
        'ρ' => "rho",
        'ϱ' => "varrho",
        'σ' => "sigma",
        'ς' => "varsigma",
        'τ' => "tau",
        'υ' => "upsilon",
        'φ' => "varphi",
        'ϕ' => "phi",
        'χ' => "chi",
        'ψ' => "psi",
        'ω' => "omega",
        'Γ' => "Gamma",
        'Δ' => "Delta",
        'Θ' => "Theta",
        'Λ' => "Lambda",
        'Ξ' => "Xi",
        'Π' => "Pi",
        'Σ' => "Sigma",
        'Υ' => "Upsilon",
        'Φ' => "Phi",
        'Ψ' => "Psi",
        'Ω' => "Omega",
        '∞' => "infty",
        '∂' => "partial",
        '∇' => "nabla",
        '∀' => "forall",
        '∃' => "exists",
        '∄' => "nexists",
        '∅' => "emptyset",
        'ℏ' => "hbar",
        'ℓ' => "ell",
        'ℜ' => "Re",
        'ℑ' => "Im",
        'ℵ' => "aleph",
        '±' => "pm",
        '∓' => "mp",
        '÷' => "div",
        '·' | '⋅' => "cdot",
        '∘' => "circ",
        '∙' => "bullet",
        '∗' => "ast",
        '⊕' => "oplus",
        '⊗' => "otimes",
        '⊙' => "odot",
        '∩' => "cap",
        '∪' => "cup",
        '∧' => "wedge",
        '∨' => "vee",
        '¬' => "neg",
        '∖' => "setminus",
        '≤' => "leq",
        '≥' => "geq",
        '≠' => "neq",
        '≈' => "approx",
        '≡' => "equiv",
        '∼' => "sim",
        '≃' => "simeq",
        '≅' => "cong",
        '∝' => "propto",
        '≪' => "ll",
        '≫' => "gg",
        '∈' => "in",
        '∉' => "notin",
        '∋' => "ni",
        '⊂' => "subset",
        '⊃' => "supset",
        '⊆' => "subseteq",
        '⊇' => "supseteq",
        '⊥' => "perp",
        '∥' => "parallel",
        '∣' => "mid",
        '≺' => "prec",
        '≻' => "succ",
        '←' => "leftarrow",
        '→' => "rightarrow",
        '↑' => "uparrow",
        '↓' => "downarrow",
        '↔' => "leftrightarrow",
        '⇐' => "Leftarrow",
        '⇒' => "Rightarrow",
        '⇔' => "Leftrightarrow",
        '↦' => "mapsto",
        '⟶' => "longrightarrow",
        '⟵' => "longleftarrow",
        '′' => "prime",
        '°' => "circ",
        '⋯' => "cdots",
        '⋮' => "vdots",
        '⋱' => "ddots",
        '√' => "surd",
        '∑' => "sum",
        '∏' => "prod",
        '∫' => "int",
        '∮' => "oint",
        '⟨' => "langle",
        '⟩' => "rangle",
        '⌈' => "lceil",
        '⌉' => "rceil",
        '⌊' => "lfloor",
        '⌋' => "rfloor",
        '‖' => "|",
        _ => return None,
    })
}
