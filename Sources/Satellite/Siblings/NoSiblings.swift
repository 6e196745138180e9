// The roster while Bonjour's directory of siblings is not wired in: none known,
// so every wake is decided at once, by this satellite alone.

struct NoSiblings: SiblingRoster {
    func siblings() async -> [Sibling] { [] }
    func advertisedName() async -> String? { nil }
}
