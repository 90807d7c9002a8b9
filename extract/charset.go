package extract

import (
	"mime"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/ianaindex"
	"golang.org/x/text/encoding/unicode"
)

// Charsets. The service's JSON is UTF-8, but a server may send another
// charset: the communications endpoint answers text/plain, and a service on
// a Central European platform may send Latin-1 or Windows-1250. A body whose
// Content-Type declares a charset other than UTF-8 (or its ASCII subset) is
// decoded to UTF-8 as it is read, before anything else reads it (the key
// screening, the splitting, the size cap): its records, raw included, hold
// the decoded text. Labels are looked up in the IANA registry
// (golang.org/x/text/encoding/ianaindex: ISO-8859-x, windows-125x, KOI8,
// UTF-16, ...), then in the WHATWG one (htmlindex: cp1250, ...). A body that
// declares no charset, or one neither registry knows, is read as UTF-8; if
// it is not valid UTF-8 the request says so (RequestInfo.InvalidUTF8) with
// the common charsets that would decode it cleanly (CharsetHint).

// declaredCharset resolves the charset a Content-Type declares: the
// encoding to decode with and its name, or nil for UTF-8, none, or a label
// no registry knows (returned as unknown).
func declaredCharset(contentType string) (enc encoding.Encoding, name, unknown string) {
	_, params, err := mime.ParseMediaType(contentType)
	label := strings.TrimSpace(params["charset"])
	if err != nil || label == "" {
		return nil, "", ""
	}
	enc, err = ianaindex.IANA.Encoding(label)
	if err != nil || enc == nil {
		if enc, err = htmlindex.Get(label); err != nil {
			return nil, "", label
		}
	}
	if enc == unicode.UTF8 {
		return nil, "", ""
	}
	name, err = ianaindex.MIME.Name(enc)
	if err != nil || name == "" {
		name = label
	}
	if name == "US-ASCII" {
		return nil, "", "" // ASCII is UTF-8
	}
	return enc, name, ""
}

// hintCharsets are the charsets CharsetHint tries, in the order it names
// them: the Western and Central European ones a server most likely sends.
var hintCharsets = []struct {
	name string
	cm   *charmap.Charmap
}{
	{"ISO-8859-1", charmap.ISO8859_1},
	{"windows-1252", charmap.Windows1252},
	{"ISO-8859-2", charmap.ISO8859_2},
	{"windows-1250", charmap.Windows1250},
}

// unclean[i][b-0x80] says whether byte b decodes, in hintCharsets[i], to a
// control character or to none at all.
var unclean = func() [][128]bool {
	out := make([][128]bool, len(hintCharsets))
	for i, h := range hintCharsets {
		for b := range 128 {
			r := h.cm.DecodeByte(byte(b + 0x80))
			out[i][b] = r == utf8.RuneError || r >= 0x80 && r < 0xA0
		}
	}
	return out
}()

// cleanCharsets names the charsets of hintCharsets that decode b without a
// control character or an undefined byte, in their order.
func cleanCharsets(b []byte) []string {
	bad := make([]bool, len(hintCharsets))
	for _, c := range b {
		if c < 0x80 {
			continue
		}
		for i := range hintCharsets {
			bad[i] = bad[i] || unclean[i][c-0x80]
		}
	}
	var out []string
	for i, h := range hintCharsets {
		if !bad[i] {
			out = append(out, h.name)
		}
	}
	return out
}
