//! Certificates for tests: a CA of the test's own, and the certificates it
//! signs for 127.0.0.1 (for server and client authentication), made with
//! Debian's `openssl` command in a directory the test owns.

use std::path::{Path, PathBuf};
use std::process::Command;

/// How many days the certificates stay valid.
const DAYS: &str = "2";

/// A CA whose key lives in a test's directory.
#[derive(Clone, Debug)]
pub struct TestCa {
    dir: PathBuf,
    name: String,
    /// The CA's certificate, PEM: what peers trust.
    pub ca_pem: Vec<u8>,
}

/// A certificate a [`TestCa`] signed, and its key, as files.
#[derive(Clone, Debug)]
pub struct Issued {
    /// The certificate, PEM.
    pub cert: PathBuf,
    /// Its private key, PEM.
    pub key: PathBuf,
}

impl Issued {
    /// The certificate and the key, read.
    ///
    /// # Errors
    ///
    /// If either file cannot be read.
    pub fn pems(&self) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
        Ok((std::fs::read(&self.cert)?, std::fs::read(&self.key)?))
    }
}

impl TestCa {
    /// Makes a CA named `name` in `dir` (files `name.crt` and `name.key`).
    ///
    /// # Errors
    ///
    /// If `openssl` is missing or fails (the error says which command), or
    /// a file cannot be read.
    pub fn make(dir: &Path, name: &str) -> std::io::Result<Self> {
        let (cert, key) = (format!("{name}.crt"), format!("{name}.key"));
        let subject = format!("/CN={name}");
        openssl(
            dir,
            &[
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &cert,
                "-subj", &subject, "-days", DAYS,
            ],
        )?;
        Ok(TestCa {
            dir: dir.to_owned(),
            name: name.to_owned(),
            ca_pem: std::fs::read(dir.join(cert))?,
        })
    }

    /// Signs a certificate named `name` (files `name.crt`, `name.key` in the
    /// CA's directory) for IP 127.0.0.1, for server and client
    /// authentication.
    ///
    /// # Errors
    ///
    /// As [`TestCa::make`].
    pub fn issue(&self, name: &str) -> std::io::Result<Issued> {
        let dir = &self.dir;
        let (cert, key, csr, ext) = (
            format!("{name}.crt"),
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.ext"),
        );
        std::fs::write(
            dir.join(&ext),
            "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n",
        )?;
        let subject = format!("/CN={name}");
        openssl(
            dir,
            &[
                "req", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &csr, "-subj",
                &subject,
            ],
        )?;
        let (ca_cert, ca_key) = (format!("{}.crt", self.name), format!("{}.key", self.name));
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                &ca_cert,
                "-CAkey",
                &ca_key,
                "-CAcreateserial",
                "-out",
                &cert,
                "-extfile",
                &ext,
                "-days",
                DAYS,
            ],
        )?;
        Ok(Issued {
            cert: dir.join(cert),
            key: dir.join(key),
        })
    }
}

/// Runs `openssl args` in `dir`.
fn openssl(dir: &Path, args: &[&str]) -> std::io::Result<()> {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => std::io::Error::new(
                error.kind(),
                "the openssl command is missing: install Debian's openssl",
            ),
            _ => error,
        })?;
    if output.status.success() {
        return Ok(());
    }
    Err(std::io::Error::other(format!(
        "openssl {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    )))
}
