package warehouse

import (
	"errors"
	"fmt"
)

// ErrMissingPrivilege means the database role lacks a right the command
// needs. Errors that carry it are *PrivilegeError values naming the right.
var ErrMissingPrivilege = errors.New("missing database privilege")

// PrivilegeError is a right the connected role lacks: which right, on which
// object, and what an administrator can do about it. It matches
// ErrMissingPrivilege under errors.Is and unwraps to the server's error, if
// any.
type PrivilegeError struct {
	// Role is the connected role (current_user).
	Role string
	// Right is the missing privilege, e.g. "CREATE" or "USAGE".
	Right string
	// Object is what the right is on, e.g. "database warehouse" or "schema agencysync".
	Object string
	// Hint says how to grant it or do without it.
	Hint string
	// Err is the server's refusal, when there was one.
	Err error
}

// Error names the role, the right and the object, then the hint.
func (e *PrivilegeError) Error() string {
	msg := fmt.Sprintf("role %s lacks %s on %s", e.Role, e.Right, e.Object)
	if e.Hint != "" {
		msg += ": " + e.Hint
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is reports whether target is ErrMissingPrivilege.
func (e *PrivilegeError) Is(target error) bool { return target == ErrMissingPrivilege }

// Unwrap returns the server's refusal, if any.
func (e *PrivilegeError) Unwrap() error { return e.Err }

// insufficientPrivilege is SQLSTATE 42501, the server's "permission denied".
const insufficientPrivilege = "42501"
