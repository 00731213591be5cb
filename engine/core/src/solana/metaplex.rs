//! Metaplex Token Metadata: where a mint's metadata account is (a program-derived address)
//! and what its Borsh data says (name, symbol, URI, update authority). Classic SPL tokens
//! keep their name and symbol there; Token-2022 mints may keep theirs in the mint itself.

use curve25519_dalek::edwards::CompressedEdwardsY;
use sha2::{Digest, Sha256};

/// The Token Metadata program.
pub const PROGRAM: &str = "metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s";

/// The account key byte of a metadata account (`MetadataV1`).
const KEY_METADATA_V1: u8 = 4;

/// The program-derived address for `seeds` under `program`: the first bump, from 255 down,
/// whose hash is not a point of the Ed25519 curve (so no private key can sign for it).
pub fn find_program_address(seeds: &[&[u8]], program: &[u8; 32]) -> Option<([u8; 32], u8)> {
    (0..=u8::MAX).rev().find_map(|bump| {
        let mut hasher = Sha256::new();
        for seed in seeds {
            hasher.update(seed);
        }
        hasher.update([bump]);
        hasher.update(program);
        hasher.update(b"ProgramDerivedAddress");
        let hash: [u8; 32] = hasher.finalize().into();
        let on_curve = CompressedEdwardsY(hash).decompress().is_some();
        (!on_curve).then_some((hash, bump))
    })
}

/// The metadata account of `mint`.
pub fn metadata_address(mint: &[u8; 32]) -> [u8; 32] {
    let program = program_bytes();
    // A bump exists for all but a vanishing fraction of seeds (each try is off the curve
    // about half the time); the mint's own address stands in were none found.
    find_program_address(&[b"metadata", &program, mint], &program).map(|(address, _)| address).unwrap_or(*mint)
}

fn program_bytes() -> [u8; 32] {
    super::keys::constant_bytes(PROGRAM)
}

/// What a metadata account says.
#[derive(Debug, PartialEq, Eq)]
pub struct Metadata {
    /// Who may change it.
    pub update_authority: [u8; 32],
    /// The mint it describes.
    pub mint: [u8; 32],
    /// Name, symbol and URI, padding removed (untrusted data).
    pub name: String,
    /// Symbol.
    pub symbol: String,
    /// URI of the off-chain JSON.
    pub uri: String,
    /// Royalty on secondary sales, basis points.
    pub seller_fee_basis_points: u16,
    /// Whether it can still be changed (None when the account ends before the flag).
    pub mutable: Option<bool>,
}

/// Reads a metadata account's data; None when it is not one (wrong key byte, too short).
pub fn parse(data: &[u8]) -> Option<Metadata> {
    let mut reader = Reader { data, at: 0 };
    if reader.byte()? != KEY_METADATA_V1 {
        return None;
    }
    let update_authority = reader.key()?;
    let mint = reader.key()?;
    let name = reader.string()?;
    let symbol = reader.string()?;
    let uri = reader.string()?;
    let seller_fee_basis_points = u16::from_le_bytes(reader.take(2)?.try_into().ok()?);
    // creators: Option<Vec<{address, verified, share}>>, then primary_sale_happened and is_mutable.
    let mutable = (|| {
        if reader.byte()? == 1 {
            let count = u32::from_le_bytes(reader.take(4)?.try_into().ok()?) as usize;
            reader.take(count.checked_mul(34)?)?;
        }
        reader.byte()?;
        Some(reader.byte()? == 1)
    })();
    Some(Metadata { update_authority, mint, name, symbol, uri, seller_fee_basis_points, mutable })
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.at.checked_add(n)?;
        let bytes = self.data.get(self.at..end)?;
        self.at = end;
        Some(bytes)
    }

    fn byte(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn key(&mut self) -> Option<[u8; 32]> {
        self.take(32)?.try_into().ok()
    }

    /// A Borsh string (u32 length, bytes), its NUL padding removed, read lossily and cleaned.
    fn string(&mut self) -> Option<String> {
        let len = u32::from_le_bytes(self.take(4)?.try_into().ok()?) as usize;
        // Metaplex caps name, symbol and URI at 200 bytes; anything much longer is not metadata.
        if len > 1_024 {
            return None;
        }
        let bytes = self.take(len)?;
        let text = String::from_utf8_lossy(bytes);
        Some(crate::rpc_http::clean_text(text.trim_end_matches('\0'), 200))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(text: &str) -> [u8; 32] {
        bs58::decode(text).into_vec().unwrap().try_into().unwrap()
    }

    #[test]
    fn derives_the_metadata_address_of_mainnet_usdc() {
        assert_eq!(program_bytes(), decode(PROGRAM));
        let usdc = decode("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v");
        // The USDC metadata account on mainnet (explorers show it as the mint's metadata).
        let expected = decode("5x38Kp4hvdomTCnCrAny4UtMUt5rQBdB6px2K1Ui45Wq");
        assert_eq!(metadata_address(&usdc), expected);
    }

    #[test]
    fn reads_padded_metadata_and_refuses_what_is_not() {
        let mut data = vec![KEY_METADATA_V1];
        data.extend([7u8; 32]);
        data.extend([9u8; 32]);
        for (text, padded) in [("USD Coin", 32), ("USDC", 10), ("https://example.com/usdc.json", 200)] {
            data.extend((padded as u32).to_le_bytes());
            let mut bytes = text.as_bytes().to_vec();
            bytes.resize(padded, 0);
            data.extend(bytes);
        }
        data.extend(250u16.to_le_bytes());
        data.extend([1, 1, 0, 0, 0]);
        data.extend([3u8; 32]);
        data.extend([1, 100, 0, 1]);
        let metadata = parse(&data).unwrap();
        assert_eq!((metadata.name.as_str(), metadata.symbol.as_str()), ("USD Coin", "USDC"));
        assert_eq!(metadata.uri, "https://example.com/usdc.json");
        assert_eq!((metadata.seller_fee_basis_points, metadata.mutable), (250, Some(true)));
        assert_eq!(metadata.mint, [9u8; 32]);
        assert!(parse(&data[..50]).is_none());
        let mut other = data.clone();
        other[0] = 6;
        assert!(parse(&other).is_none());
    }
}
