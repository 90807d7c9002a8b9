package extract

// Redact replaces the client's keys in s by [REDACTED], as its own errors and
// log lines are redacted (notifications reuse it).
func (c *Client) Redact(s string) string { return c.redact(s) }
