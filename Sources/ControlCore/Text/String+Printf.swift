// Numbers formatted as C's printf formats them ("%.1f dBFS"), without Foundation's
// String(format:): the daemon links FoundationEssentials alone, which has none.
// vsnprintf gives exactly the digits String(format:) gave, rounding included.
import Glibc

extension String {
    /// `format` with `arguments` as vsnprintf writes them; for numbers, not for `%@`.
    public init(printf format: String, _ arguments: CVarArg...) {
        // A va_list is used up by one call, so a longer text is rendered again from the start.
        func render(_ size: Int) -> (text: String, needed: Int) {
            withVaList(arguments) { list in
                var buffer = [CChar](repeating: 0, count: size)
                let needed = Int(vsnprintf(&buffer, size, format, list))
                return (buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }, needed)
            }
        }
        let first = render(64)
        self = first.needed < 64 ? first.text : render(first.needed + 1).text
    }
}
