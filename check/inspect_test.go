package check

import (
	"slices"
	"testing"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/stream"
)

// TestInspectRunsTheDeclarationsHooks: an e-mail record goes through the
// emails table's check and the participants hook as the transform would.
// A mailbox thread under a provider-specific name is filled by the check
// (from_hook); a record id that is not positive is refused by the check,
// which then fills nothing; a
// users object the hook cannot read is a problem, named after its table.
func TestInspectRunsTheDeclarationsHooks(t *testing.T) {
	t.Parallel()
	comms, ok := stream.Lookup("communications")
	if !ok {
		t.Fatal("no communications stream")
	}
	const (
		email = `"email":{"subject":"Ofertă","email_at":"2026-03-01T09:00:00Z","gmail_thread":"th-42"}`
		from  = `"users":{"from":[{"id":7,"email":"ana@example.ro","full_name":"Ana Pop"}],"to":[],"cc":[],"bcc":[]}`
	)
	for _, c := range []struct {
		name, raw string
		problems  []string
		id        string
		thread    string // the state of emails.mailbox_thread
	}{
		{"complete", `{"id":12,` + email + `,` + from + `}`, nil, "12", StateFromHook},
		{"id not positive", `{"id":-5,` + email + `,` + from + `}`,
			[]string{"the e-mail check of the declaration refuses the record"}, "-5", StateMissing},
		{"users unreadable", `{"id":12,` + email + `,"users":{"from":"ana@example.ro"}}`,
			[]string{"the users of the record cannot be read as the declaration expects"}, "12", StateFromHook},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			in := inspect(comms, stream.EndpointCommunications, extract.Record{Raw: []byte(c.raw)}, nil)
			if !slices.Equal(in.problems, c.problems) {
				t.Errorf("problems %q, want %q", in.problems, c.problems)
			}
			if in.id != c.id {
				t.Errorf("id %q, want %q", in.id, c.id)
			}
			states := map[string]string{}
			for _, cc := range in.columns {
				states[cc.Column] = cc.State
			}
			for column, want := range map[string]string{
				"emails.record_id":      StatePresent,
				"emails.subject":        StatePresent,
				"emails.mailbox_thread": c.thread,
				"emails.mailbox_id":     StateMissing,
			} {
				if states[column] != want {
					t.Errorf("%s: state %q, want %q", column, states[column], want)
				}
			}
		})
	}
}
