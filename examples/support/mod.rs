//! What the load examples share: their arguments and what they read of the server process.

/// The value after `name` among the program's arguments.
pub fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// The server's CPU seconds so far (user + system).
pub fn cpu_seconds(pid: &str) -> Result<f64, Box<dyn std::error::Error>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').ok_or("an odd /proc stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>()? + fields[12].parse::<f64>()?;
    Ok(ticks / 100.0)
}

/// Opens the event stream at `url` as `token`: its response, once the server accepted it.
pub async fn open_stream(
    http: &reqwest::Client,
    url: &str,
    token: &str,
) -> Result<reqwest::Response, Box<dyn std::error::Error>> {
    let resp = http.get(url).bearer_auth(token).send().await?;
    if !resp.status().is_success() {
        return Err(format!(
            "a stream was refused: {} {}",
            resp.status(),
            resp.text().await.unwrap_or_default()
        )
        .into());
    }
    Ok(resp)
}

/// An HTTP client that keeps a connection for each of `streams` streams and a few requests.
pub fn stream_client(streams: usize) -> Result<reqwest::Client, Box<dyn std::error::Error>> {
    // reqwest is built without a default TLS provider (the crate installs one).
    chronoscope::tls::install_default_provider();
    Ok(reqwest::Client::builder()
        .pool_max_idle_per_host(streams + 8)
        .build()?)
}
