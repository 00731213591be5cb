//! A little public key infrastructure for the PDF signature tests, made by the `openssl`
//! command line at test time: a root CA, an intermediate CA, two signers (RSA and ECDSA), a
//! time-stamping certificate and an unrelated root, issued with `openssl ca` as a real CA
//! issues them. With the `suite` feature, [`Tsa`] is an RFC 3161 time-stamp authority
//! (`openssl ts -reply`) on a loopback port.
//!
//! pyHanko, from the tools venv, is the independent side: [`PYHANKO_VALIDATE`] validates the
//! signatures of a PDF and [`PYHANKO_SIGN`] signs one. Nothing here uses Paperchain's code.
//!
//! Every certificate is valid from one day ago for two years and signed with SHA-256; the
//! CAs and the time-stamping certificate have P-256 keys.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Validates the signatures of a PDF with pyHanko:
/// `python PYHANKO_VALIDATE PDF [--root ROOT.pem ...] [--at ISO8601]` prints
/// `{"signatures": [...]}`, one object per signature in signing order (field, type,
/// signer, intact, valid, trusted, trust_problem, coverage, modification_level, docmdp_ok,
/// signing_time, timestamp, subfilter, md_algorithm, summary, bottom_line; `error` and false
/// flags where pyHanko failed), or `{"error": ...}` for a file pyHanko cannot read. Only the
/// `--root` certificates are trusted; nothing is fetched. See its docstring.
pub const PYHANKO_VALIDATE: &str = include_str!("pyhanko_validate.py");

/// Signs a PDF with pyHanko in an incremental update:
/// `python PYHANKO_SIGN IN.pdf OUT.pdf P12 PASSWORD [--field NAME] [--tsa URL]
/// [--visible PAGE,X1,Y1,X2,Y2] [--pades]` prints `ok`. PAGE counts from 1; without
/// `--pades` the signature is `adbe.pkcs7.detached`. See its docstring.
pub const PYHANKO_SIGN: &str = include_str!("pyhanko_sign.py");

/// The password of every PKCS#12 file.
pub const PASSWORD: &str = "correct horse";

/// The common name of the RSA signer.
pub const RSA_SIGNER: &str = "Ada Signer";

/// The e-mail address of the RSA signer (in its subject and its subjectAltName).
pub const RSA_SIGNER_EMAIL: &str = "ada@example.com";

/// The common name of the ECDSA signer.
pub const EC_SIGNER: &str = "Eve Signer";

/// The e-mail address of the ECDSA signer.
pub const EC_SIGNER_EMAIL: &str = "eve@example.com";

/// The policy the time-stamp authority puts in its tokens.
pub const TSA_POLICY: &str = "1.2.3.4.1";

/// The CA folder made by [`Pki::new`]. Every file is in `dir`: `root.pem`,
/// `intermediate.pem`, `chain.pem` (intermediate then root), `other-root.pem`, `rsa.pem`,
/// `ec.pem`, `tsa.pem` and their `.key` files (unencrypted PKCS#8), `rsa.p12`, `ec.p12`,
/// `rsa-legacy.p12`, `ca.cnf` (the `openssl ca` configuration) and `ts.cnf` (the
/// `openssl ts` one). Every key is new but the RSA signer's: one per process, as it takes
/// longest to make.
pub struct Pki {
    /// The folder holding the files.
    pub dir: PathBuf,
}

/// The `openssl ca` configuration: the three CAs, their policy and the certificate extensions.
const CA_CONFIG: &str = r#"# The Paperchain test CA. Paths are relative to the folder openssl runs in.
[ca]
default_ca = ca_root

[ca_root]
database = root-db/index.txt
serial = root-db/serial
new_certs_dir = root-db
certificate = root.pem
private_key = root.key
default_md = sha256
policy = policy_signer
unique_subject = no
email_in_dn = yes
copy_extensions = none
preserve = yes

[ca_intermediate]
database = intermediate-db/index.txt
serial = intermediate-db/serial
new_certs_dir = intermediate-db
certificate = intermediate.pem
private_key = intermediate.key
default_md = sha256
policy = policy_signer
unique_subject = no
email_in_dn = yes
copy_extensions = none
preserve = yes

[ca_other]
database = other-db/index.txt
serial = other-db/serial
new_certs_dir = other-db
certificate = other-root.pem
private_key = other-root.key
default_md = sha256
policy = policy_signer
unique_subject = no
email_in_dn = yes
copy_extensions = none
preserve = yes

[policy_signer]
countryName = optional
organizationName = supplied
commonName = supplied
emailAddress = optional

[req]
distinguished_name = req_dn
prompt = no
[req_dn]
CN = unused

[v3_root]
basicConstraints = critical, CA:true
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always

[v3_intermediate]
basicConstraints = critical, CA:true, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always

[v3_signer]
basicConstraints = critical, CA:false
keyUsage = critical, digitalSignature, nonRepudiation
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = email:copy

[v3_tsa]
basicConstraints = critical, CA:false
keyUsage = critical, digitalSignature, nonRepudiation
extendedKeyUsage = critical, timeStamping
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"#;

/// The time-stamp authority's configuration: `tsa_config1` grants, `tsa_reject` accepts
/// only MD5 message imprints and so rejects every other query (status rejection, badAlg).
const TS_CONFIG: &str = r#"# The Paperchain test time-stamp authority.
[tsa_config1]
serial = tsa-serial
crypto_device = builtin
signer_digest = sha256
default_policy = 1.2.3.4.1
other_policies = 1.2.3.4.2
digests = sha256, sha384, sha512
accuracy = secs:1, millisecs:500, microsecs:100
clock_precision_digits = 0
ordering = no
tsa_name = no
ess_cert_id_chain = no
ess_cert_id_alg = sha256

[tsa_reject]
serial = tsa-serial
crypto_device = builtin
signer_digest = sha256
default_policy = 1.2.3.4.1
other_policies = 1.2.3.4.2
digests = md5
accuracy = secs:1
clock_precision_digits = 0
ordering = no
tsa_name = no
ess_cert_id_chain = no
ess_cert_id_alg = sha256
"#;

/// The RSA signer's key (PEM), shared by every [`Pki`] of the process.
static RSA_KEY: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();

const EC_KEY: &[&str] = &["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"];

impl Pki {
    /// Makes the CA in `dir` (created if missing) with `openssl`; panics with openssl's
    /// error output when a command fails.
    pub fn new(dir: &Path) -> Pki {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
        let pki = Pki { dir: dir.to_path_buf() };
        pki.write("ca.cnf", CA_CONFIG.as_bytes());
        pki.write("ts.cnf", TS_CONFIG.as_bytes());
        pki.write("tsa-serial", b"01\n");
        for db in ["root-db", "intermediate-db", "other-db"] {
            std::fs::create_dir_all(dir.join(db)).unwrap();
            pki.write(&format!("{db}/index.txt"), b"");
            pki.write(&format!("{db}/serial"), b"1000\n");
        }
        // The RSA key takes longest (100 ms to 1 s): made while the CAs are, once per process.
        let rsa_key = {
            let dir = dir.to_path_buf();
            std::thread::spawn(move || {
                let key = RSA_KEY.get_or_init(|| {
                    openssl(&dir, ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"])
                });
                std::fs::write(dir.join("rsa.key"), key).expect("the RSA key is written");
            })
        };

        pki.self_signed("root", "ca_root", "/C=FR/O=Paperchain Test/CN=Paperchain Test Root CA");
        pki.issue(
            "intermediate",
            EC_KEY,
            "ca_root",
            "v3_intermediate",
            "/C=FR/O=Paperchain Test/CN=Paperchain Test Intermediate CA",
        );
        pki.self_signed("other-root", "ca_other", "/C=FR/O=Somebody Else/CN=Somebody Else Root CA");
        let ec = format!("/C=FR/O=Paperchain Test/CN={EC_SIGNER}/emailAddress={EC_SIGNER_EMAIL}");
        pki.issue("ec", EC_KEY, "ca_intermediate", "v3_signer", &ec);
        pki.issue("tsa", EC_KEY, "ca_intermediate", "v3_tsa", "/C=FR/O=Paperchain Test/CN=Paperchain Test TSA");
        if let Err(panic) = rsa_key.join() {
            std::panic::resume_unwind(panic);
        }
        let rsa = format!("/C=FR/O=Paperchain Test/CN={RSA_SIGNER}/emailAddress={RSA_SIGNER_EMAIL}");
        pki.issue("rsa", &["-key", "rsa.key"], "ca_intermediate", "v3_signer", &rsa);

        let chain = [std::fs::read(pki.intermediate_pem()).unwrap(), std::fs::read(pki.root_pem()).unwrap()].concat();
        pki.write("chain.pem", &chain);
        pki.pkcs12("rsa", RSA_SIGNER, "rsa.p12", &[]);
        pki.pkcs12("ec", EC_SIGNER, "ec.p12", &[]);
        // As Windows' certificate export writes them.
        let legacy = ["-keypbe", "PBE-SHA1-3DES", "-certpbe", "PBE-SHA1-3DES", "-macalg", "sha1"];
        pki.pkcs12("rsa", RSA_SIGNER, "rsa-legacy.p12", &legacy);
        pki
    }

    /// The root CA's certificate (PEM).
    pub fn root_pem(&self) -> PathBuf {
        self.dir.join("root.pem")
    }

    /// The root CA's key (PEM).
    pub fn root_key_pem(&self) -> PathBuf {
        self.dir.join("root.key")
    }

    /// The intermediate CA's certificate (PEM), issued by the root; it issued the signers
    /// and the time-stamping certificate.
    pub fn intermediate_pem(&self) -> PathBuf {
        self.dir.join("intermediate.pem")
    }

    /// The intermediate CA's key (PEM).
    pub fn intermediate_key_pem(&self) -> PathBuf {
        self.dir.join("intermediate.key")
    }

    /// The intermediate then the root certificate, in one PEM file.
    pub fn chain_pem(&self) -> PathBuf {
        self.dir.join("chain.pem")
    }

    /// A self-signed root that issued nothing here: trusting only it trusts no signer.
    pub fn other_root_pem(&self) -> PathBuf {
        self.dir.join("other-root.pem")
    }

    /// The RSA-2048 signer's certificate (PEM): [`RSA_SIGNER`], O=Paperchain Test, C=FR,
    /// [`RSA_SIGNER_EMAIL`]; keyUsage digitalSignature and nonRepudiation (critical).
    pub fn rsa_cert_pem(&self) -> PathBuf {
        self.dir.join("rsa.pem")
    }

    /// The RSA signer's key (PEM).
    pub fn rsa_key_pem(&self) -> PathBuf {
        self.dir.join("rsa.key")
    }

    /// The P-256 ECDSA signer's certificate (PEM): [`EC_SIGNER`], same organisation and
    /// key usage as the RSA signer.
    pub fn ec_cert_pem(&self) -> PathBuf {
        self.dir.join("ec.pem")
    }

    /// The ECDSA signer's key (PEM).
    pub fn ec_key_pem(&self) -> PathBuf {
        self.dir.join("ec.key")
    }

    /// The time-stamping certificate (PEM, P-256): extendedKeyUsage timeStamping (critical).
    pub fn tsa_cert_pem(&self) -> PathBuf {
        self.dir.join("tsa.pem")
    }

    /// The time-stamping key (PEM).
    pub fn tsa_key_pem(&self) -> PathBuf {
        self.dir.join("tsa.key")
    }

    /// The RSA signer as PKCS#12: key, certificate, intermediate and root; OpenSSL 3's
    /// defaults (AES-256-CBC, PBKDF2, SHA-256 MAC); password [`PASSWORD`].
    pub fn rsa_p12(&self) -> PathBuf {
        self.dir.join("rsa.p12")
    }

    /// The ECDSA signer as PKCS#12, as [`Pki::rsa_p12`].
    pub fn ec_p12(&self) -> PathBuf {
        self.dir.join("ec.p12")
    }

    /// The RSA signer as a legacy PKCS#12 (3DES with SHA-1 key derivation, SHA-1 MAC), as
    /// older Windows exports are; password [`PASSWORD`].
    pub fn rsa_legacy_p12(&self) -> PathBuf {
        self.dir.join("rsa-legacy.p12")
    }

    /// The password of every PKCS#12 file, [`PASSWORD`].
    pub fn password(&self) -> &'static str {
        PASSWORD
    }

    /// The `openssl ts` configuration, with the sections `tsa_config1` (grants) and
    /// `tsa_reject` (rejects).
    pub fn ts_config(&self) -> PathBuf {
        self.dir.join("ts.cnf")
    }

    /// A self-signed CA certificate `name.pem` with a new P-256 key `name.key`.
    fn self_signed(&self, name: &str, ca: &str, subject: &str) {
        self.request(name, EC_KEY, subject);
        let key = format!("{name}.key");
        self.sign(name, ca, "v3_root", &["-selfsign", "-keyfile", &key]);
    }

    /// Certificate `name.pem` issued by `ca` with the extensions of section `extensions`,
    /// for the key `key` names (`-newkey …` makes `name.key`).
    fn issue(&self, name: &str, key: &[&str], ca: &str, extensions: &str, subject: &str) {
        self.request(name, key, subject);
        self.sign(name, ca, extensions, &[]);
    }

    /// A certificate request `name.csr` for `subject`.
    fn request(&self, name: &str, key: &[&str], subject: &str) {
        let (csr, key_out) = (format!("{name}.csr"), format!("{name}.key"));
        let mut args = vec!["req", "-new", "-config", "ca.cnf", "-subj", subject, "-out", &csr];
        args.extend_from_slice(key);
        if key.first() == Some(&"-newkey") {
            args.extend(["-noenc", "-keyout", &key_out]);
        }
        openssl(&self.dir, args);
    }

    /// `openssl ca` of section `ca` signs `name.csr` into `name.pem`, with the extensions of
    /// section `extensions` and the validity of [`validity`].
    fn sign(&self, name: &str, ca: &str, extensions: &str, extra: &[&str]) {
        let (start, end) = validity();
        let (csr, pem) = (format!("{name}.csr"), format!("{name}.pem"));
        let mut args = vec!["ca", "-config", "ca.cnf", "-name", ca, "-batch", "-notext", "-in", &csr, "-out", &pem];
        args.extend(["-extensions", extensions, "-startdate", &start, "-enddate", &end]);
        args.extend_from_slice(extra);
        openssl(&self.dir, args);
    }

    /// `name.key` and `name.pem` with the chain, as PKCS#12 file `out`.
    fn pkcs12(&self, name: &str, friendly_name: &str, out: &str, extra: &[&str]) {
        let (key, pem, password) = (format!("{name}.key"), format!("{name}.pem"), format!("pass:{PASSWORD}"));
        let mut args = vec!["pkcs12", "-export", "-inkey", &key, "-in", &pem, "-certfile", "chain.pem"];
        args.extend(["-name", friendly_name, "-passout", &password, "-out", out]);
        args.extend_from_slice(extra);
        openssl(&self.dir, args);
    }

    fn write(&self, name: &str, contents: &[u8]) {
        let path = self.dir.join(name);
        std::fs::write(&path, contents).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
}

/// Runs `openssl` in `dir` and answers what it printed; panics with its error output when
/// it fails.
fn openssl<I, S>(dir: &Path, args: I) -> Vec<u8>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<S> = args.into_iter().collect();
    let shown = args.iter().map(|a| a.as_ref().to_string_lossy()).collect::<Vec<_>>().join(" ");
    let out = Command::new("openssl")
        .args(&args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("openssl does not run ({e}); run `cargo xtask setup`"));
    assert!(
        out.status.success(),
        "`openssl {shown}` failed ({}) in {}:\n{}",
        out.status,
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `-startdate` and `-enddate` for `openssl ca`: one day ago, and two years after that.
fn validity() -> (String, String) {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("the clock is after 1970");
    let start = now.as_secs() - 86_400;
    (generalized_time(start), generalized_time(start + 731 * 86_400))
}

/// `YYYYMMDDHHMMSSZ` for seconds since 1970 (UTC).
fn generalized_time(secs: u64) -> String {
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}{month:02}{day:02}{:02}{:02}{:02}Z", rest / 3600, rest % 3600 / 60, rest % 60)
}

/// Signs `input` into `output` with [`PYHANKO_SIGN`], the key and certificates of PKCS#12
/// file `p12`, and the script's `options` (`--pades`, `--tsa URL`…); panics with pyHanko's
/// error output when it fails. Blocks: from a tokio test whose `Tsa` must answer, call it
/// in `spawn_blocking`.
pub fn sign_with_pyhanko(input: &Path, output: &Path, p12: &Path, password: &str, options: &[&str]) {
    let mut args: Vec<&OsStr> = vec![input.as_os_str(), output.as_os_str(), p12.as_os_str(), OsStr::new(password)];
    args.extend(options.iter().map(OsStr::new));
    let printed = run_script(PYHANKO_SIGN, &args);
    assert_eq!(printed.trim(), "ok", "pyHanko did not sign {}", input.display());
}

/// What [`PYHANKO_VALIDATE`] prints about `pdf` when only `roots` are trusted.
#[cfg(feature = "suite")]
pub fn validate_with_pyhanko(pdf: &Path, roots: &[&Path]) -> serde_json::Value {
    let mut args = vec![pdf.as_os_str()];
    for root in roots {
        args.extend([OsStr::new("--root"), root.as_os_str()]);
    }
    let printed = run_script(PYHANKO_VALIDATE, &args);
    serde_json::from_str(&printed).unwrap_or_else(|e| panic!("the validator printed no JSON ({e}): {printed}"))
}

/// Runs a Python script of the tools venv with `args`; what it printed, or a panic with its
/// error output.
fn run_script(script: &str, args: &[&OsStr]) -> String {
    let out = Command::new(crate::tools::python()).arg("-c").arg(script).args(args).output().expect("python runs");
    assert!(
        out.status.success(),
        "python failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("python printed UTF-8")
}

#[cfg(feature = "suite")]
pub use tsa::Tsa;

#[cfg(feature = "suite")]
mod tsa {
    use std::path::Path;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use tokio::net::TcpListener;

    use super::Pki;
    use crate::loopback::{read_request, write_response};

    /// Held while `openssl ts -reply` runs: it reads and writes the serial file, and the
    /// query and reply files are the same for every request.
    static OPENSSL_TS: Mutex<()> = Mutex::new(());

    /// How a [`Tsa`] answers.
    #[derive(Clone, Copy)]
    enum Mode {
        Grant,
        Reject,
        Fail,
    }

    /// An RFC 3161 time-stamp authority on a loopback port: every POST body is a query,
    /// answered by `openssl ts -reply` with the [`Pki`]'s time-stamping certificate (its
    /// tokens carry that certificate, the intermediate and the root, and policy
    /// [`super::TSA_POLICY`]). Stopped when dropped.
    pub struct Tsa {
        /// `http://127.0.0.1:<port>/`.
        pub url: String,
        requests: Arc<AtomicUsize>,
        task: tokio::task::JoinHandle<()>,
    }

    impl Drop for Tsa {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    impl Tsa {
        /// A time-stamp authority granting every SHA-256, SHA-384 or SHA-512 query: 200,
        /// `application/timestamp-reply`. A body that is no query gets openssl's answer, a
        /// response with status rejection (badDataFormat); other methods than POST get 405.
        pub async fn start(pki: &Pki) -> Tsa {
            Tsa::serve(pki, Mode::Grant).await
        }

        /// A time-stamp authority answering 200 with a real time-stamp response whose
        /// status is rejection (2; failure info badAlg, "Message digest algorithm is not
        /// supported.") and no token: `openssl ts -reply` with the `tsa_reject` section,
        /// which accepts only MD5 imprints.
        pub async fn start_rejecting(pki: &Pki) -> Tsa {
            Tsa::serve(pki, Mode::Reject).await
        }

        /// A time-stamp authority answering every request 500 with a text body.
        pub async fn start_failing(pki: &Pki) -> Tsa {
            Tsa::serve(pki, Mode::Fail).await
        }

        /// How many requests it has read.
        pub fn requests(&self) -> usize {
            self.requests.load(Ordering::SeqCst)
        }

        async fn serve(pki: &Pki, mode: Mode) -> Tsa {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}/", listener.local_addr().unwrap());
            let requests = Arc::new(AtomicUsize::new(0));
            let counter = requests.clone();
            let dir = pki.dir.clone();
            let task = tokio::spawn(async move {
                while let Ok((mut socket, _)) = listener.accept().await {
                    let counter = counter.clone();
                    let dir = dir.clone();
                    tokio::spawn(async move {
                        let Some(request) = read_request(&mut socket).await else { return };
                        counter.fetch_add(1, Ordering::SeqCst);
                        if !request.head.starts_with("POST ") {
                            return write_response(&mut socket, 405, &[], b"POST a time-stamp query").await;
                        }
                        let section = match mode {
                            Mode::Grant => "tsa_config1",
                            Mode::Reject => "tsa_reject",
                            Mode::Fail => {
                                let body = b"the time-stamp authority is down";
                                return write_response(&mut socket, 500, &[], body).await;
                            }
                        };
                        let reply = tokio::task::spawn_blocking(move || {
                            let _serial = OPENSSL_TS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                            reply(&dir, section, &request.body)
                        })
                        .await
                        .expect("the openssl task ends");
                        match reply {
                            Ok(reply) => {
                                let headers = [("Content-Type", "application/timestamp-reply".to_string())];
                                write_response(&mut socket, 200, &headers, &reply).await;
                            }
                            Err(error) => write_response(&mut socket, 500, &[], error.as_bytes()).await,
                        }
                    });
                }
            });
            Tsa { url, requests, task }
        }
    }

    /// The answer of `openssl ts -reply` to `query`, or openssl's error output.
    fn reply(dir: &Path, section: &str, query: &[u8]) -> Result<Vec<u8>, String> {
        std::fs::write(dir.join("tsa-query.tsq"), query).map_err(|e| e.to_string())?;
        let _ = std::fs::remove_file(dir.join("tsa-reply.tsr"));
        let mut args = vec!["ts", "-reply", "-queryfile", "tsa-query.tsq", "-config", "ts.cnf", "-section", section];
        args.extend(["-inkey", "tsa.key", "-signer", "tsa.pem", "-chain", "chain.pem", "-out", "tsa-reply.tsr"]);
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .map_err(|e| format!("openssl does not run: {e}"))?;
        match std::fs::read(dir.join("tsa-reply.tsr")) {
            Ok(reply) if out.status.success() => Ok(reply),
            _ => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
        }
    }
}

#[cfg(all(test, feature = "suite"))]
mod tests {
    use std::path::Path;
    use std::process::Command;

    use serde_json::Value;

    use super::*;

    /// `openssl verify` of `leaf` trusting only `root`, with the intermediate offered.
    fn verifies(pki: &Pki, root: &Path, leaf: &Path) -> bool {
        Command::new("openssl")
            .arg("verify")
            .arg("-CAfile")
            .arg(root)
            .arg("-untrusted")
            .arg(pki.intermediate_pem())
            .arg(leaf)
            .output()
            .expect("openssl runs")
            .status
            .success()
    }

    #[test]
    fn the_certificates_chain_to_the_root_only() {
        let dir = tempfile::tempdir().unwrap();
        let started = std::time::Instant::now();
        let pki = Pki::new(dir.path());
        eprintln!("Pki::new took {:?}", started.elapsed());

        for leaf in [pki.rsa_cert_pem(), pki.ec_cert_pem(), pki.tsa_cert_pem()] {
            assert!(verifies(&pki, &pki.root_pem(), &leaf), "{} does not chain to the root", leaf.display());
            assert!(!verifies(&pki, &pki.other_root_pem(), &leaf), "{} chains to the other root", leaf.display());
        }
        let text = String::from_utf8(openssl(&pki.dir, ["x509", "-in", "rsa.pem", "-noout", "-text"])).unwrap();
        assert!(text.contains("CN = Ada Signer, emailAddress = ada@example.com"), "{text}");
        assert!(
            text.contains("X509v3 Key Usage: critical\n                Digital Signature, Non Repudiation"),
            "{text}"
        );
        assert!(text.contains("Public-Key: (2048 bit)") && text.contains("ecdsa-with-SHA256"), "{text}");
        let text = String::from_utf8(openssl(&pki.dir, ["x509", "-in", "tsa.pem", "-noout", "-text"])).unwrap();
        assert!(text.contains("X509v3 Extended Key Usage: critical\n                Time Stamping"), "{text}");

        let password = format!("pass:{PASSWORD}");
        for (p12, encryption) in [
            (pki.rsa_p12(), "PBES2, PBKDF2, AES-256-CBC"),
            (pki.ec_p12(), "PBES2, PBKDF2, AES-256-CBC"),
            (pki.rsa_legacy_p12(), "pbeWithSHA1And3-KeyTripleDES-CBC"),
        ] {
            let out = Command::new("openssl")
                .args(["pkcs12", "-info", "-noout", "-passin", &password, "-in"])
                .arg(&p12)
                .output()
                .unwrap();
            let info = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{}: {info}", p12.display());
            assert_eq!(info.matches("Certificate bag").count(), 3, "{}: {info}", p12.display());
            assert!(info.contains(&format!("Shrouded Keybag: {encryption}")), "{}: {info}", p12.display());
        }
    }

    #[test]
    fn the_dates_are_utc_calendar_dates() {
        assert_eq!(generalized_time(0), "19700101000000Z");
        assert_eq!(generalized_time(951_782_400 + 3_661), "20000229010101Z");
        assert_eq!(generalized_time(1_767_225_599), "20251231235959Z");
    }

    #[tokio::test]
    async fn the_tsa_grants_rejects_and_fails() {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::new(dir.path());
        std::fs::write(dir.path().join("data.txt"), b"what was signed").unwrap();
        let query = openssl(dir.path(), ["ts", "-query", "-data", "data.txt", "-sha256", "-cert"]);
        let client = reqwest::Client::new();
        let post = |url: String| {
            client.post(url).header("Content-Type", "application/timestamp-query").body(query.clone()).send()
        };

        let tsa = Tsa::start(&pki).await;
        let answer = post(tsa.url.clone()).await.unwrap();
        assert_eq!(answer.status(), 200);
        assert_eq!(answer.headers()["content-type"], "application/timestamp-reply");
        std::fs::write(dir.path().join("granted.tsr"), answer.bytes().await.unwrap()).unwrap();
        let verify = "ts -verify -data data.txt -in granted.tsr -CAfile root.pem -untrusted intermediate.pem";
        assert_eq!(String::from_utf8(openssl(dir.path(), verify.split(' '))).unwrap().trim(), "Verification: OK");
        let text = String::from_utf8(openssl(dir.path(), ["ts", "-reply", "-in", "granted.tsr", "-text"])).unwrap();
        // The policy shows as `tsa_policy1` where the system's openssl.cnf names that OID.
        assert!(text.contains("Status: Granted.") && text.contains("Hash Algorithm: sha256"), "{text}");
        assert_eq!(post(tsa.url.clone()).await.unwrap().status(), 200);
        assert_eq!(tsa.requests(), 2);

        let rejecting = Tsa::start_rejecting(&pki).await;
        let answer = post(rejecting.url.clone()).await.unwrap();
        assert_eq!(answer.status(), 200);
        std::fs::write(dir.path().join("rejected.tsr"), answer.bytes().await.unwrap()).unwrap();
        let text = String::from_utf8(openssl(dir.path(), ["ts", "-reply", "-in", "rejected.tsr", "-text"])).unwrap();
        assert!(text.contains("Status: Rejected.") && text.contains("TST info:\nNot included."), "{text}");

        let failing = Tsa::start_failing(&pki).await;
        assert_eq!(post(failing.url.clone()).await.unwrap().status(), 500);
        assert_eq!((rejecting.requests(), failing.requests()), (1, 1));
    }

    #[tokio::test]
    async fn pyhanko_signs_and_validates_with_the_test_ca() {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::new(dir.path());
        let tsa = Tsa::start(&pki).await;
        let plain = dir.path().join("plain.pdf");
        let page = "from reportlab.pdfgen import canvas\nimport sys\n\
                    c = canvas.Canvas(sys.argv[1], pageCompression=0)\n\
                    c.drawString(72, 720, 'Hello signed world')\nc.showPage()\nc.save()\n";
        crate::tools::run_python(page, &[&plain]);

        // PAdES with a time stamp; then, over it, a visible adbe.pkcs7.detached signature
        // with the ECDSA key and one from the legacy PKCS#12.
        let signed = dir.path().join("signed.pdf");
        let thrice = dir.path().join("thrice.pdf");
        let (rsa, ec, legacy) = (pki.rsa_p12(), pki.ec_p12(), pki.rsa_legacy_p12());
        let (url, paths) = (tsa.url.clone(), (plain.clone(), signed.clone(), thrice.clone()));
        tokio::task::spawn_blocking(move || {
            let (plain, signed, thrice) = paths;
            let twice = thrice.with_file_name("twice.pdf");
            sign_with_pyhanko(&plain, &signed, &rsa, PASSWORD, &["--pades", "--tsa", &url, "--field", "Ada"]);
            sign_with_pyhanko(&signed, &twice, &ec, PASSWORD, &["--visible", "1,72,600,272,660"]);
            sign_with_pyhanko(&twice, &thrice, &legacy, PASSWORD, &[]);
        })
        .await
        .unwrap();
        // pyHanko also asks for a token to size the signature before it signs.
        assert!(tsa.requests() >= 1);

        let report = validate_with_pyhanko(&signed, &[&pki.root_pem()]);
        eprintln!("{report:#}");
        let sig = &report["signatures"][0];
        assert_eq!(report["signatures"].as_array().unwrap().len(), 1);
        assert_eq!(sig["field"], "Ada");
        assert_eq!(sig["signer"]["common_name"], RSA_SIGNER);
        assert_eq!((&sig["intact"], &sig["valid"], &sig["trusted"]), (&true.into(), &true.into(), &true.into()));
        assert_eq!((&sig["coverage"], &sig["modification_level"]), (&"ENTIRE_FILE".into(), &"NONE".into()));
        assert_eq!((&sig["subfilter"], &sig["md_algorithm"]), (&"/ETSI.CAdES.detached".into(), &"sha256".into()));
        let ts = &sig["timestamp"];
        assert!(ts["time"].is_string(), "{ts}");
        assert_eq!((&ts["intact"], &ts["valid"], &ts["trusted"]), (&true.into(), &true.into(), &true.into()));
        assert_eq!(sig["bottom_line"], true);

        let elsewhere = validate_with_pyhanko(&signed, &[&pki.other_root_pem()]);
        let sig = &elsewhere["signatures"][0];
        assert_eq!((&sig["intact"], &sig["valid"], &sig["trusted"]), (&true.into(), &true.into(), &false.into()));
        assert_eq!((&sig["timestamp"]["trusted"], &sig["bottom_line"]), (&false.into(), &false.into()));

        let all = validate_with_pyhanko(&thrice, &[&pki.root_pem()]);
        let sigs = all["signatures"].as_array().unwrap();
        let fields: Vec<_> =
            sigs.iter().map(|sig| (sig["field"].as_str(), sig["signer"]["common_name"].as_str())).collect();
        assert_eq!(
            fields,
            [
                (Some("Ada"), Some(RSA_SIGNER)),
                (Some("Signature1"), Some(EC_SIGNER)),
                (Some("Signature2"), Some(RSA_SIGNER))
            ],
            "{all}"
        );
        assert!(sigs.iter().all(|sig| sig["bottom_line"] == true), "{all}");
        assert_eq!(
            (&sigs[0]["coverage"], &sigs[0]["modification_level"]),
            (&"ENTIRE_REVISION".into(), &"FORM_FILLING".into())
        );
        assert_eq!((&sigs[1]["subfilter"], &sigs[1]["timestamp"]), (&"/adbe.pkcs7.detached".into(), &Value::Null));
        assert_eq!(sigs[2]["coverage"], "ENTIRE_FILE");

        // One byte of the page's text, inside the signed range.
        let mut bytes = std::fs::read(&signed).unwrap();
        let at = bytes.windows(5).position(|w| w == b"Hello").expect("the page text is uncompressed");
        bytes[at] = b'J';
        let tampered = dir.path().join("tampered.pdf");
        std::fs::write(&tampered, &bytes).unwrap();
        let report = validate_with_pyhanko(&tampered, &[&pki.root_pem()]);
        let sig = &report["signatures"][0];
        assert_eq!(
            (&sig["intact"], &sig["trusted"], &sig["bottom_line"]),
            (&false.into(), &false.into(), &false.into())
        );
        assert_eq!(sig["summary"], "INVALID");

        let unreadable = dir.path().join("not.pdf");
        std::fs::write(&unreadable, b"not a PDF").unwrap();
        assert!(validate_with_pyhanko(&unreadable, &[])["error"].is_string());
    }
}
