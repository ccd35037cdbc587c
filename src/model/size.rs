//! Sizes as the user writes them (`64K`, `16M`), for flags and fault specs alike.

/// Parse a size such as `1024`, `64K`, `16M`, `1G` (powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, mult) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        None => (t, 1),
        Some((i, _)) => {
            let unit = t[i..].trim().to_ascii_uppercase();
            let m = match unit.trim_end_matches("IB").trim_end_matches('B') {
                "" => 1,
                "K" => 1 << 10,
                "M" => 1 << 20,
                "G" => 1 << 30,
                _ => return Err(format!("bad size {s:?}: use a number with K, M or G")),
            };
            (&t[..i], m)
        }
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("bad size {s:?}: use a positive number with K, M or G"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("16M"), Ok(16 << 20));
        assert_eq!(parse_size("2KiB"), Ok(2048));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert!(parse_size("0").is_err());
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("").is_err());
    }
}
