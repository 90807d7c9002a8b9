// Package sandbox is a deterministic, misbehaving-on-demand stand-in for the
// Agency Data Service: the main interface (brands, projects, finance) with an
// admin API on one listener, and the communications endpoint on another.
//
// New builds the dataset from Options (the same options give byte-identical
// answers); Start serves it; the admin methods (Advance, AppendEmails,
// EditBrand, SetFaults, Truth, ...) change or inspect it. README.md in this
// directory documents the shapes, limits, faults, variants and the admin API.
package sandbox
