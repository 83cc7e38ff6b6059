// Package docs holds the project's documentation (README.md here is the index). Its tests
// check that every YAML snippet of a page is an example file, and that every link and cited
// docs/ path resolves.
package docs
