package output

// Backend is an inference engine a candidate can be served by.
type Backend struct {
	// Name is the backend's name in documents and the API ("vllm").
	Name string
	// DisplayName is how people write it ("vLLM").
	DisplayName string
	// Color is its colour in plots, from a colour-blind safe palette (Okabe–Ito).
	Color string
}

// Backend names, as documents and the API spell them.
const (
	BackendVLLM   = "vllm"
	BackendSGLang = "sglang"
	BackendTRTLLM = "trtllm"
)

// Backends lists the backends in their display order.
var Backends = []Backend{
	{Name: BackendVLLM, DisplayName: "vLLM", Color: "#0072b2"},
	{Name: BackendSGLang, DisplayName: "SGLang", Color: "#d55e00"},
	{Name: BackendTRTLLM, DisplayName: "TensorRT-LLM", Color: "#009e73"},
}

// OtherBackendColor colours a backend Backends does not list.
const OtherBackendColor = "#7f7f7f"

// BackendNames returns the names of Backends, in order.
func BackendNames() []string {
	names := make([]string, len(Backends))
	for i, b := range Backends {
		names[i] = b.Name
	}
	return names
}

// LookupBackend returns the backend called name.
func LookupBackend(name string) (Backend, bool) {
	for _, b := range Backends {
		if b.Name == name {
			return b, true
		}
	}
	return Backend{}, false
}

// BackendColor is the plot colour of the backend called name (OtherBackendColor when unknown).
func BackendColor(name string) string {
	if b, ok := LookupBackend(name); ok {
		return b.Color
	}
	return OtherBackendColor
}
