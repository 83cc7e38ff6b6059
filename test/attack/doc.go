// Package attack holds the attack suite: each test plays a tenant (or a compromised search pod)
// trying one of the holes docs/operate/security.md lists, on the sandbox, and asserts that the operator
// refuses it. Each test fails if its fix is reverted. The tests build only with -tags attack and
// run only with DGDR_ATTACK=1 (make test-attack).
package attack
