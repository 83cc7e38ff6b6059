package env

import "testing"

func TestNamePrefix(t *testing.T) {
	cases := []struct{ testName, want string }{
		{"TestAccessReview", "testaccessreview"},
		{"TestAutoApply/tenant_refused:autoApply", "testautoapply-tenant-refused-autoapply"},
		{"TestX/a__b", "testx-a-b"},
		{"TestAVeryLongNameThatGoesOnAndOn/with_a_subtest", "testaverylongnamethatgoesonandon-with-a"},
		{"Test_/_", "test"},
	}
	for _, c := range cases {
		if got := namePrefix(c.testName); got != c.want {
			t.Errorf("namePrefix(%q) = %q, want %q", c.testName, got, c.want)
		}
	}
}
