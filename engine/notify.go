package engine

// Redact removes the API keys from s, as the client does in its errors and logs.
func (e *Engine) Redact(s string) string { return e.client.Redact(s) }
