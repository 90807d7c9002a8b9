package config

import (
	"errors"
	"strings"
	"testing"
)

// TestKeyWithControlCharacterOrSpaceIsAConfigurationError: a key carrying a
// line break, another control character or surrounding white space (a
// paste, a file written with echo) is refused at load time, naming the
// variable and never quoting the value.
func TestKeyWithControlCharacterOrSpaceIsAConfigurationError(t *testing.T) {
	t.Parallel()
	const secret = "k3y-S3cret-value-0123456789"
	for _, variable := range []string{"AGENCY_API_KEY", "AGENCY_COMMS_KEY"} {
		for name, value := range map[string]string{
			"trailing newline": secret + "\n",
			"inner newline":    secret[:8] + "\n" + secret[8:],
			"carriage return":  secret + "\r",
			"tab":              "\t" + secret,
			"leading space":    " " + secret,
			"trailing space":   secret + " ",
			"inner space":      secret[:5] + " " + secret[5:],
			"NUL":              secret + "\x00",
			"DEL":              secret + "\x7f",
			"no-break space":   secret + "\u00a0",
			"line separator":   secret + "\u2028",
		} {
			t.Run(variable+"/"+name, func(t *testing.T) {
				t.Parallel()
				_, err := loadTest(env(map[string]string{variable: value}), noFiles)
				var ce *Error
				if !errors.As(err, &ce) {
					t.Fatalf("LoadFrom = %v, want a *config.Error", err)
				}
				if ce.Variable != variable {
					t.Fatalf("error names %q, want %q: %v", ce.Variable, variable, err)
				}
				if strings.Contains(err.Error(), secret[:8]) || strings.Contains(err.Error(), secret[8:]) {
					t.Fatalf("error quotes the key: %v", err)
				}
			})
		}
	}
}

// TestKeyFromFileWithCRLFIsAccepted: a secret file's final line break
// (\n or \r\n) is not part of the key; only what remains is checked.
func TestKeyFromFileWithCRLFIsAccepted(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{"/run/secrets/k": []byte("good-key-value\r\n")}
	cfg := mustLoad(t, env(map[string]string{"AGENCY_API_KEY_FILE": "/run/secrets/k"}),
		func(p string) ([]byte, error) { return files[p], nil })
	if cfg.APIKey.Value() != "good-key-value" {
		t.Fatalf("key %q", cfg.APIKey.Value())
	}
	// A key file with a line break inside is refused, naming the variable.
	files["/run/secrets/k"] = []byte("good-key\nvalue\n")
	_, err := loadTest(env(map[string]string{"AGENCY_API_KEY_FILE": "/run/secrets/k"}),
		func(p string) ([]byte, error) { return files[p], nil })
	var ce *Error
	if !errors.As(err, &ce) || !strings.HasPrefix(ce.Variable, "AGENCY_API_KEY") || strings.Contains(err.Error(), "good-key") {
		t.Fatalf("LoadFrom = %v, want an error naming AGENCY_API_KEY without the value", err)
	}
}
