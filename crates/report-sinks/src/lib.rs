//! The daily report's sinks: Slack digests (Block Kit) and Loki push lines.
