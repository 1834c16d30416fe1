package sourceregistries

import (
	"testing"

	"platform.dev/platform/apiserver/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }
