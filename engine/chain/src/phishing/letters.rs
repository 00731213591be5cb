//! Text helpers of the URL check that see letters as a reader does: untrusted Unicode made
//! safe to show, the skeleton of a label (accents dropped, Cyrillic, Greek and Armenian
//! look-alikes mapped to the Latin letters they pass for: the idea of Unicode TR39, with a
//! hand-written map), ASCII folds (`rn` for `m`, digits for letters), edit distance, the
//! scripts a label mixes, and the words of a path.
//!
//! What this module must not do: know brands, lists or scores, or use a route file.

use unicode_normalization::UnicodeNormalization;

/// Untrusted Unicode shown safely: control, invisible and direction characters as `\u{…}`.
pub(crate) fn safe_display(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let invisible = matches!(c as u32, 0xAD | 0x034F | 0x061C | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180B..=0x180F
            | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F | 0x3164 | 0xFE00..=0xFE0F | 0xFEFF | 0xFFA0
            | 0xFFF0..=0xFFFB | 0xE0000..=0xE0FFF);
        if c.is_control() || invisible {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// The Latin letter a confusable character passes for (a hand-written part of Unicode
/// TR39's confusables: Cyrillic, Greek, Armenian and Latin look-alikes of a-z).
fn confusable(c: char) -> Option<char> {
    Some(match c {
        'а' | 'α' | 'ɑ' => 'a',
        'ь' => 'b',
        'с' | 'ϲ' | 'ᴄ' => 'c',
        'ԁ' | 'ɗ' => 'd',
        'е' | 'ё' | 'ε' | 'ҽ' => 'e',
        'ɡ' | 'ց' | 'ԍ' => 'g',
        'һ' | 'հ' => 'h',
        'і' | 'ї' | 'ι' | 'ı' | 'ɩ' => 'i',
        'ј' | 'ϳ' | 'ȷ' => 'j',
        'κ' | 'к' => 'k',
        'ӏ' | 'ǀ' | 'ⅼ' => 'l',
        'п' | 'η' | 'ո' => 'n',
        'о' | 'ο' | 'օ' | 'σ' => 'o',
        'р' | 'ρ' => 'p',
        'ԛ' | 'զ' => 'q',
        'г' => 'r',
        'ѕ' => 's',
        'τ' => 't',
        'υ' | 'ս' => 'u',
        'ν' | 'ѵ' => 'v',
        'ԝ' | 'ω' | 'ѡ' => 'w',
        'х' | 'χ' => 'x',
        'у' | 'γ' | 'ү' => 'y',
        'ᴢ' => 'z',
        _ => return None,
    })
}

/// The skeleton of a label: decomposed, accents dropped, confusables mapped to the Latin
/// letters they pass for, lower-case.
pub(crate) fn skeleton(label: &str) -> String {
    label
        .nfd()
        .filter(|c| !matches!(*c as u32, 0x0300..=0x036F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF))
        .flat_map(|c| confusable(c).map_or_else(|| c.to_lowercase().collect::<Vec<_>>(), |l| vec![l]))
        .collect()
}

/// An ASCII name folded as a reader's eye folds it: digits that pass for letters, `rn`
/// for `m`, `vv` for `w`, `cl` for `d`, and `i`, `l`, `1` as one letter.
pub(crate) fn fold(name: &str) -> String {
    let mapped: String = name
        .chars()
        .filter(|c| *c != '-')
        .map(|c| match c {
            '0' => 'o',
            '1' | 'i' | '|' => 'l',
            '3' => 'e',
            '4' | '@' => 'a',
            '5' | '$' => 's',
            '7' => 't',
            '8' => 'b',
            c => c,
        })
        .collect();
    mapped.replace("rn", "m").replace("vv", "w").replace("cl", "d")
}

/// Optimal string alignment distance (Damerau-Levenshtein with adjacent swaps).
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1).min(rows[i][j - 1] + 1).min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

/// The script of a letter, for the mixed-script check; None for digits, `-` and marks.
pub(crate) fn script(c: char) -> Option<&'static str> {
    Some(match c as u32 {
        0x30..=0x39 | 0x2D => return None,
        0x41..=0x5A | 0x61..=0x7A | 0xC0..=0x24F | 0x1E00..=0x1EFF => "Latin",
        0x0300..=0x036F => return None,
        0x0370..=0x03FF | 0x1F00..=0x1FFF => "Greek",
        0x0400..=0x052F | 0x1C80..=0x1C8F | 0x2DE0..=0x2DFF | 0xA640..=0xA69F => "Cyrillic",
        0x0530..=0x058F => "Armenian",
        0x13A0..=0x13FF | 0xAB70..=0xABBF => "Cherokee",
        _ => "other",
    })
}

/// The scripts of a label whose letters can pass for Latin ones, when it mixes them.
pub(crate) fn mixed_scripts(label: &str) -> Option<Vec<&'static str>> {
    let mut seen: Vec<&'static str> = Vec::new();
    for s in label.chars().filter_map(script).filter(|s| *s != "other") {
        if !seen.contains(&s) {
            seen.push(s);
        }
    }
    (seen.len() > 1).then_some(seen)
}

/// The words of a path or query: ASCII letters and digits, lower-case.
pub(crate) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_ascii_lowercase).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skeletons_folds_and_distances() {
        assert_eq!(skeleton("аррӏе"), "apple", "Cyrillic only");
        assert_eq!(skeleton("uniswäp"), "uniswap", "an accent");
        assert_eq!(skeleton("metаmаѕk"), "metamask", "Latin and Cyrillic");
        assert_eq!(skeleton("bücher"), "bucher");
        assert_eq!(fold("rnetamask"), fold("metamask"));
        assert_eq!(fold("un1swap"), fold("uniswap"));
        assert_eq!(fold("0pensea"), fold("opensea"));
        assert_eq!(edit_distance("uniswap", "unsiwap"), 1, "a swap is one edit");
        assert_eq!(edit_distance("metamask", "metamaskk"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(mixed_scripts("pаypal"), Some(vec!["Latin", "Cyrillic"]));
        assert_eq!(mixed_scripts("bücher"), None);
        assert_eq!(safe_display("a\u{202e}b\u{200b}"), "a\\u{202e}b\\u{200b}");
    }
}
