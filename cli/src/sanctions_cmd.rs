//! `paperchain sanctions`: the OFAC SDN list `/v1/check/sanctions` screens against.
//! `refresh` reads the official SDN XML (downloaded, or a file) and writes the list of its
//! digital currency addresses to the data folder, whole or not at all; `status` says which
//! list is in use, its date and how many addresses it has.

use std::path::Path;

use anyhow::{Context as _, bail};
use paperchain_engine::sanctions::{self, ListOrigin, SanctionsList};

/// `paperchain sanctions …`.
#[derive(clap::Args)]
pub struct SanctionsArgs {
    #[command(subcommand)]
    command: SanctionsCommand,
}

#[derive(clap::Subcommand)]
enum SanctionsCommand {
    /// Refresh the list from OFAC's SDN XML (sdn_advanced.xml or sdn.xml): downloads it, or
    /// reads the file given, and writes its digital currency addresses to the data folder.
    /// A file that does not parse, or holds no address, replaces nothing.
    Refresh {
        /// A URL (http or https) or a local file of the SDN XML.
        #[arg(long, value_name = "FILE_OR_URL", default_value = sanctions::OFFICIAL_URL)]
        from: String,
    },
    /// The list in use: bundled or refreshed, its date, its addresses per asset.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a `sanctions` command.
pub async fn run(args: SanctionsArgs) -> anyhow::Result<()> {
    match args.command {
        SanctionsCommand::Refresh { from } => refresh(&from, &sanctions::refreshed_path()).await,
        SanctionsCommand::Status { json } => status(&sanctions::refreshed_path(), json),
    }
}

async fn refresh(from: &str, target: &Path) -> anyhow::Result<()> {
    let xml = if from.starts_with("http://") || from.starts_with("https://") {
        eprintln!("Downloading {from} …");
        let body = sanctions::download(from).await.map_err(|e| anyhow::anyhow!("{e}; the list in use is unchanged"))?;
        String::from_utf8(body)
            .map_err(|_| anyhow::anyhow!("{from} is not UTF-8 text; the list in use is unchanged"))?
    } else {
        let size = std::fs::metadata(from).with_context(|| format!("reading {from}"))?.len();
        if size > sanctions::MAX_XML_BYTES {
            bail!("{from} is {size} bytes, more than the {} a refresh reads", sanctions::MAX_XML_BYTES);
        }
        std::fs::read_to_string(from).with_context(|| format!("reading {from}"))?
    };
    let list = sanctions::sdn_xml::parse(&xml, from)
        .map_err(|e| anyhow::anyhow!("{from} is not a usable SDN XML file ({e}); the list in use is unchanged"))?;
    if list.entries.is_empty() {
        bail!("{from} lists no digital currency address; the list in use is unchanged");
    }
    if let Ok(text) = std::fs::read_to_string(target)
        && let Ok(current) = SanctionsList::parse_tsv(&text)
        && current.date > list.date
    {
        bail!(
            "{from} is the list of {}, older than the refreshed list of {} in {}; nothing was replaced \
             (delete that file to go back to an older list)",
            list.date,
            current.date,
            target.display()
        );
    }
    crate::money_cmd::write_atomically(target, list.to_tsv().as_bytes())?;
    println!(
        "OFAC SDN list of {}: {} ({}) written to {}",
        list.date,
        addresses(&list),
        counts(&list),
        target.display()
    );
    let bundled = sanctions::bundled();
    if list.date < bundled.date {
        println!("Note: the bundled list of {} is newer and stays in use.", bundled.date);
    }
    Ok(())
}

fn addresses(list: &SanctionsList) -> String {
    match list.entries.len() {
        1 => "1 address".into(),
        n => format!("{n} addresses"),
    }
}

fn counts(list: &SanctionsList) -> String {
    list.counts().iter().map(|(asset, n)| format!("{asset} {n}")).collect::<Vec<_>>().join(", ")
}

fn status(target: &Path, json: bool) -> anyhow::Result<()> {
    let in_use = sanctions::choose(target);
    let list = &in_use.list;
    if json {
        let answer = serde_json::json!({
            "source": in_use.origin.as_str(),
            "date": list.date.to_string(),
            "origin": list.source,
            "entries": list.entries.len(),
            "assets": list.counts(),
            "refreshed_file": target.display().to_string(),
            "refreshed_file_exists": target.exists(),
        });
        println!("{}", serde_json::to_string_pretty(&answer)?);
        return Ok(());
    }
    println!("In use: the {} OFAC SDN list of {} ({})", in_use.origin.as_str(), list.date, addresses(list));
    println!("Assets: {}", counts(list));
    println!("Source: {}", list.source);
    match (in_use.origin, target.exists()) {
        (ListOrigin::Refreshed, _) => println!("File: {}", target.display()),
        (ListOrigin::Bundled, true) => {
            println!("A refreshed list at {} is older or unreadable; not used.", target.display())
        }
        (ListOrigin::Bundled, false) => {
            println!("No refreshed list yet; `paperchain sanctions refresh` downloads the official one.")
        }
    }
    Ok(())
}
