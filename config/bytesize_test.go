package config

import "testing"

func TestByteSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"33554432": 32 << 20, "32MiB": 32 << 20, "32 mib": 32 << 20, "1GiB": 1 << 30,
		"512KiB": 512 << 10, " 7 ": 7, "0": 0} {
		var b ByteSize
		if err := b.EnvDecode(in); err != nil || int64(b) != want {
			t.Errorf("%q: %d, %v; want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1MiB", "32MB", "1.5MiB", "lots", "9999999999GiB"} {
		var b ByteSize
		if err := b.EnvDecode(in); err == nil {
			t.Errorf("%q: %d, want an error", in, b)
		}
	}
	for b, want := range map[ByteSize]string{32 << 20: "32MiB", 1 << 30: "1GiB", 3072: "3KiB", 1536: "1536"} {
		if got := b.String(); got != want {
			t.Errorf("%d: %q, want %q", int64(b), got, want)
		}
	}
}
