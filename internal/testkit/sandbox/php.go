package sandbox

import (
	"strconv"
	"strings"
	"time"
)

// This file holds the encoder habits of a PHP (Laravel-style) service that the
// php-* variants reproduce, and the field names of the renamed-fields
// variant. They change shapes and names only: the truth stays canonical.

// null writes a missing value: null, or false under php-false.
func (st mainStyle) null(e *enc) {
	if st.phpFalse {
		e.raw("false")
		return
	}
	e.null()
}

func (st mainStyle) strOrNull(e *enc, s string, null bool) {
	if null {
		st.null(e)
		return
	}
	e.str(s)
}

func (st mainStyle) tsOrNull(e *enc, t time.Time) {
	if t.IsZero() {
		st.null(e)
		return
	}
	e.ts(t)
}

// int writes a count: a number, or a numeric string under php-strings.
func (st mainStyle) int(e *enc, v int64) { e.num(v, st.phpStrings) }

// money writes an amount: a number, or a string under string-money or php-strings.
func (st mainStyle) money(e *enc, cents int64) { e.money(cents, st.stringMoney || st.phpStrings) }

// flag writes a boolean: true/false, or "1"/"0" under php-strings.
func (st mainStyle) flag(e *enc, v bool) {
	if !st.phpStrings {
		e.bool(v)
		return
	}
	if v {
		e.str("1")
	} else {
		e.str("0")
	}
}

// emptyObj writes an object that has no members: {} or, under
// php-empty-array, [] (PHP encodes an empty array as a list).
func (st mainStyle) emptyObj(e *enc) {
	if st.phpEmptyArray {
		e.raw("[]")
	} else {
		e.raw("{}")
	}
}

// name returns the key of a field: canonical, or its renamed-fields name.
func (st mainStyle) name(canonical string, renamed map[string]string) string {
	if st.renamed {
		if r, ok := renamed[canonical]; ok {
			return r
		}
	}
	return canonical
}

// Field names of the renamed-fields variant, by canonical name. A project's
// budget object {amount, currency} becomes budget_total and budget_currency
// beside the other fields.
var (
	renamedProject = map[string]string{
		"name": "title", "status": "state", "deadline": "due_date", "start_date": "starts_on",
	}
	renamedContact = map[string]string{
		"first_name": "firstname", "last_name": "lastname", "position": "job_title", "is_primary": "primary",
	}
	renamedInvoice = map[string]string{
		"number": "invoice_no", "issue_date": "issued_on", "amount": "total", "due_date": "payment_due",
	}
)

// num writes an integer as a number or a numeric string.
func (e *enc) num(v int64, asString bool) {
	if asString {
		e.sep()
		e.b = append(e.b, '"')
		e.b = strconv.AppendInt(e.b, v, 10)
		e.b = append(e.b, '"')
		return
	}
	e.int(v)
}

// writePaginatorLinks writes the page links of a Laravel paginator: previous,
// the pages around the current one, next.
func writePaginatorLinks(e *enc, p page, path string) {
	last := p.lastPage()
	link := func(n int, label string, active bool) {
		e.open()
		e.key("url")
		if n < 1 || n > last {
			e.null()
		} else {
			e.str(pageURL(path, n))
		}
		e.key("label").str(label)
		e.key("active").bool(active)
		e.close()
	}
	e.openArr()
	link(p.current-1, "&laquo; Previous", false)
	for n := max(1, p.current-2); n <= min(last, p.current+2); n++ {
		link(n, strconv.Itoa(n), n == p.current)
	}
	link(p.current+1, "Next &raquo;", false)
	e.closeArr()
}

func pageURL(path string, n int) string { return path + "?page=" + strconv.Itoa(n) }

// urlOrNull writes the URL of page n, or null when there is no such page.
func urlOrNull(e *enc, path string, n, last int) {
	if n < 1 || n > last {
		e.null()
		return
	}
	e.str(pageURL(path, n))
}

// writeLaravelMeta writes the paginator's fields except data and the page
// URLs: current_page, from, last_page, path, per_page, to, total.
func writeLaravelMeta(e *enc, p page, path string, asStrings bool) {
	from, to := p.bounds()
	e.key("current_page").num(int64(p.current), asStrings)
	e.key("from")
	if to > from {
		e.num(int64(from+1), asStrings)
	} else {
		e.null()
	}
	e.key("last_page").num(int64(p.lastPage()), asStrings)
	e.key("path").str(path)
	e.key("per_page").num(int64(p.perPage), asStrings)
	e.key("to")
	if to > from {
		e.num(int64(to), asStrings)
	} else {
		e.null()
	}
	e.key("total").num(int64(p.total), asStrings)
}

// unprocessable writes Laravel's 422 validation answer for a reason whose
// first word names the parameter ("per_page must be ..."); reasons about the
// request as a whole are filed under "body".
func unprocessable(e *enc, reason string) (int, string) {
	field := "body"
	if f, _, ok := strings.Cut(reason, " "); ok && isParamName(f) {
		field = f
	}
	msg := "The " + reason + "."
	e.b = append(e.b, `{"message":`...)
	e.b = appendJSONString(e.b, msg)
	e.b = append(e.b, `,"errors":{`...)
	e.b = appendJSONString(e.b, field)
	e.b = append(e.b, `:[`...)
	e.b = appendJSONString(e.b, msg)
	e.b = append(e.b, "]}}"...)
	return 422, ctJSON
}

func isParamName(s string) bool {
	switch s {
	case "page", "per_page", "updated_since", "brand_id", "level", "user_id", "domain_id",
		"-brand_url", "date_start", "date_end", "with_message":
		return true
	}
	return false
}

// badParam answers a bad parameter: 400 with the spec's body, or 422 under php-422.
func (s *Server) badParam(e *enc, reason string) (int, string) {
	if s.vars.php422 {
		return unprocessable(e, reason)
	}
	return badRequest(e, reason)
}
