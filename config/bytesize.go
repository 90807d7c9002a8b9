package config

import (
	"fmt"
	"strconv"
	"strings"
)

// ByteSize is a number of bytes, parsed from a plain integer ("33554432")
// or one with a binary unit ("32MiB"; KiB, MiB, GiB, case-insensitive, an
// optional space before the unit).
type ByteSize int64

// byteUnits are the units ByteSize takes, largest first.
var byteUnits = []struct {
	name string
	n    int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// EnvDecode implements envconfig.Decoder.
func (b *ByteSize) EnvDecode(v string) error {
	s := strings.TrimSpace(v)
	scale := int64(1)
	for _, u := range byteUnits {
		if len(s) > len(u.name) && strings.EqualFold(s[len(s)-len(u.name):], u.name) {
			s, scale = strings.TrimSpace(s[:len(s)-len(u.name)]), u.n
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/scale {
		return &valueError{fmt.Sprintf("%q is not a size in bytes", v)}
	}
	*b = ByteSize(n * scale)
	return nil
}

// String renders the size in the largest unit that divides it, e.g.
// "32MiB", else in bytes.
func (b ByteSize) String() string {
	for _, u := range byteUnits {
		if b != 0 && int64(b)%u.n == 0 {
			return strconv.FormatInt(int64(b)/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(int64(b), 10)
}
