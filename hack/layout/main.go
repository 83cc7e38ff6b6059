// Command layout writes the package table of README.md from the packages of the module and their
// doc comments, between the markers layoutBegin and layoutEnd, so that the table names every
// package and says what each is in its own words. It fails, naming them, when a package has no
// doc comment. `make layout` runs it; `make verify` fails when README.md then differs.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	root := flag.String("root", ".", "the module's root directory")
	readme := flag.String("readme", "README.md", "the file whose table is rewritten")
	flag.Parse()
	if err := run(*root, *readme); err != nil {
		fmt.Fprintln(os.Stderr, "layout:", err)
		os.Exit(1)
	}
}

func run(root, readme string) error {
	pkgs, err := loadPackages(root)
	if err != nil {
		return err
	}
	table, err := renderTable(pkgs)
	if err != nil {
		return err
	}
	old, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	updated, err := splice(string(old), table)
	if err != nil {
		return fmt.Errorf("%s: %w", readme, err)
	}
	if updated == string(old) {
		return nil
	}
	return os.WriteFile(readme, []byte(updated), 0o644)
}
