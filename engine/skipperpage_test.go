package engine

import "testing"

// TestSkipPerPageLeavesRoom: for every number of held records past the
// first page, the page size skipHeld asks with lies within half a page of
// the server's, its page holding the last held record starts with a held
// record, and it leaves room for at least a quarter page of new records
// after it (so that an hour's new e-mails do not spill into the next page).
func TestSkipPerPageLeavesRoom(t *testing.T) {
	t.Parallel()
	for _, per := range []int{1000, 500, 100} {
		for held := per + 1; held <= 300*per; held++ {
			p := skipPerPage(held, per)
			if p > per || p < per/2 {
				t.Fatalf("skipPerPage(%d, %d) = %d, outside [%d, %d]", held, per, p, per/2, per)
			}
			page := (held-1)/p + 1  // the page of the last held record
			first := (page-1)*p + 1 // the position of its first record
			room := page*p - held   // the positions after the last held one
			if first > held || room < per/4 {
				t.Fatalf("skipPerPage(%d, %d) = %d: page %d starts at %d, leaves room for %d", held, per, p, page, first, room)
			}
		}
	}
}
