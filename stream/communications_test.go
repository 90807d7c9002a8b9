package stream_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/agencysync/agencysync/stream"
)

// participantsOf lists the participants of a communication record as the
// users table's hook does: one line per element (role, key, user key,
// e-mail, platform user id), or the error that rejects the record.
func participantsOf(t testing.TB, rec string) (string, error) {
	t.Helper()
	s, _ := stream.Lookup("communications")
	users, ok := s.Table("users")
	if !ok || users.Elements == nil {
		t.Fatal("no users table listed by a hook")
	}
	var b strings.Builder
	var scratch stream.Scratch
	err := users.Elements(s, stream.NewView([]byte(rec), nil), &scratch, func(e stream.Element) {
		fmt.Fprintf(&b, "%v %q %v %v %v\n", e.Set["role"], e.Key, e.Set["user_key"], e.Set["email"], e.Set["platform_user_id"])
	})
	return b.String(), err
}

// forcedObject is the JSON array list as a PHP encoder forced to write
// objects writes it: {"0": …, "1": …}.
func forcedObject(list gjson.Result) string {
	var b strings.Builder
	b.WriteByte('{')
	i := 0
	list.ForEach(func(_, e gjson.Result) bool {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%d":%s`, i, e.Raw)
		i++
		return true
	})
	return b.String() + "}"
}

// FuzzParticipants: in every role, a list of users written as an object
// keyed "0".."n-1" reads exactly as the same list written as an array —
// the same participants, or the same reason to reject the record — and no
// shape of users panics.
func FuzzParticipants(f *testing.F) {
	ana := `{"first_name":"Ana-Maria","last_name":"Popescu","full_name":"Ana-Maria Popescu","email":"Ana.Popescu@Agentie.ro","phone":"","status":"Activ"}`
	ioana := `{"first_name":"Ioana","last_name":null,"full_name":"Ioana ","email":"ioana@client-brand.ro","phone":""}`
	f.Add(`[`+ana+`]`, `{"17":`+ioana+`}`)
	f.Add(`[`+ana+`,null,`+ioana+`]`, `[]`)
	f.Add(`[`+ana+`,{"full_name":"Fără adresă"}]`, `{"0":`+ioana+`,"7":`+ana+`}`)
	f.Add(`[[],false,`+ioana+`]`, `{"email":"solo@y.ro"}`)
	f.Add(`["x"]`, `{"0":`+ana+`}`)
	f.Add(`[`+strings.Repeat(ana+`,`, 11)+ioana+`]`, `null`)
	f.Fuzz(func(t *testing.T, list, other string) {
		for _, role := range []string{"from", "to", "cc", "bcc"} {
			users := map[string]string{"from": `[` + ana + `]`, "to": other, "cc": `[]`, "bcc": `[]`}
			if role == "to" {
				users["from"] = other
			}
			rec := func(v string) string {
				users[role] = v
				return fmt.Sprintf(`{"email":{"subject":"s"},"users":{"from":%s,"to":%s,"cc":%s,"bcc":%s}}`,
					users["from"], users["to"], users["cc"], users["bcc"])
			}
			participantsOf(t, rec(list)) // any text: no panic
			if !json.Valid([]byte(list)) || !json.Valid([]byte(other)) {
				continue
			}
			array := list
			if l := gjson.Parse(list); !l.IsArray() {
				array = "[" + list + "]" // any JSON value as a list's member
			}
			got, gotErr := participantsOf(t, rec(array))
			forced := forcedObject(gjson.Parse(array))
			want, wantErr := participantsOf(t, rec(forced))
			if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("users.%s as %s:\n%s%v\nas %s:\n%s%v", role, array, got, gotErr, forced, want, wantErr)
			}
		}
	})
}
