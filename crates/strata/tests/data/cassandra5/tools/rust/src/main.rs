//! Connects through the capture proxy with default settings, as an application would.
use scylla::client::session_builder::SessionBuilder;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let session = SessionBuilder::new().known_node("127.0.0.1:9043").build().await?;
    session
        .query_unpaged(
            "CREATE KEYSPACE capture WITH replication = \
             {'class': 'SimpleStrategy', 'replication_factor': 1}",
            &[],
        )
        .await?;
    session
        .query_unpaged("CREATE TABLE capture.t (k int PRIMARY KEY, v text)", &[])
        .await?;
    session.await_schema_agreement().await?;
    session.refresh_metadata().await?;
    let rows = session
        .query_unpaged("SELECT release_version FROM system.local", &[])
        .await?
        .into_rows_result()?;
    let (version,): (String,) = rows.first_row()?;
    println!("release_version {version}");
    Ok(())
}
