# A stand-in for AIPerf in the launcher's tests (launcher_test.go): see __main__.py.
