package benchmark

import (
	"context"
	"fmt"

	"github.com/agencysync/agencysync/internal/testkit/oracle"
)

// compareWithTruth compares the warehouse in schema with the sandbox's whole
// truth through oracle.Compare, the comparison the reliability suite uses.
func (h *harness) compareWithTruth(ctx context.Context, sb *Sandbox, schema string) ([]oracle.Check, error) {
	body, err := sb.Truth(ctx)
	if err != nil {
		return nil, err
	}
	tr, err := oracle.Read(body)
	body.Close()
	if err != nil {
		return nil, fmt.Errorf("read truth: %w", err)
	}
	return oracle.Compare(ctx, h.pool, schema, tr)
}
