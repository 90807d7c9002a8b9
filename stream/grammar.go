package stream

// The pieces of JSON's grammar that View's splitter (on a record's text) and
// extract's page scan (on a response's bytes) both check, said once.

// SkipNumber returns the index after the JSON number starting at b[i],
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, and false when none
// starts there.
func SkipNumber[T ~string | ~[]byte](b T, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if i = skipDigits(b, i); i < 0 {
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		if i = skipDigits(b, i+1); i < 0 {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i = skipDigits(b, i); i < 0 {
			return 0, false
		}
	}
	return i, true
}

// skipDigits returns the index after the digits from b[i] on, -1 when
// there are none.
func skipDigits[T ~string | ~[]byte](b T, i int) int {
	if end := digitsEnd(b, i); end > i {
		return end
	}
	return -1
}

// SkipEscape returns the index after the escape of a JSON string whose
// backslash stands at b[i-1]: one of \" \\ \/ \b \f \n \r \t, or \u and four
// hex digits. It returns false for anything else.
func SkipEscape[T ~string | ~[]byte](b T, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 1, true
	case 'u':
		if i+4 >= len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
			return 0, false
		}
		return i + 5, true
	}
	return 0, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// IsInteger reports whether s is an optionally signed run of decimal digits
// (of any length): an id given as a number, a key of rows keyed by id.
func IsInteger(s string) bool {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}
