// Turns control requests into calls on the actors and writes each one's single
// result. `watch` turns its connection into a stream of events until the client
// goes or the daemon stops. A `listen` or `ask` with a callback is carried to
// its end whether or not its caller stays, and its result also goes to the
// callback (without `wait`, the caller is only told it was accepted). Every
// command that needs control rights is first checked against the peer's
// credentials (AccessPolicy) and logged with them, allowed or refused.
import Glibc
import Synchronization
import SatelliteCore

/// The daemon's ControlHandler.
public final class CommandRouter: ControlHandler {
    private let conversation: Conversation
    private let chooser: ServerChooser
    private let settings: SettingsKeeper
    private let volume: SpeakerVolume
    private let admin: ServerAdmin
    private let board: StatusBoard
    private let bus: EventBus
    private let callbacks: CallbackSender
    private let doctor: Doctor
    private let capture: AudioCapture
    private let keeper: StateKeeper
    /// After `pair`, `token set` and `token clear`: the house's keys come from the token.
    private let tokenChanged: @Sendable () -> Void
    private struct Watch { let task: WorkGroup.Handle; let id: JSONValue; let connection: ControlConnection }
    /// The watches' forwarding: children of `run()`.
    private let work = WorkGroup()
    private let watches = Mutex<[ObjectIdentifier: Watch]>([:])

    public init(conversation: Conversation, chooser: ServerChooser, admin: ServerAdmin, settings: SettingsKeeper,
                volume: SpeakerVolume, board: StatusBoard, bus: EventBus, callbacks: CallbackSender, doctor: Doctor,
                capture: AudioCapture, keeper: StateKeeper, tokenChanged: @escaping @Sendable () -> Void = {}) {
        self.tokenChanged = tokenChanged
        self.conversation = conversation
        self.chooser = chooser
        self.admin = admin
        self.settings = settings
        self.volume = volume
        self.board = board
        self.bus = bus
        self.callbacks = callbacks
        self.doctor = doctor
        self.capture = capture
        self.keeper = keeper
    }

    public func handle(_ request: ControlRequest, on connection: ControlConnection, underWay: @escaping @Sendable () -> Void) async {
        guard await admit(request.command, from: connection.peer) else {
            connection.finish(id: request.id, .error(AccessPolicy.refusal(request.command, peer: connection.peer)))
            return
        }
        // The next request on this connection waits for this one's result, unless this one waits on the
        // network, the microphone or a person: then it is under way once started (a listen, once its turn is).
        switch request.command {
        case .ask, .meter, .pair, .use, .doctor, .serverStatus, .serverService, .serverPipeline, .serverDoctor, .serverLogs,
             .serverRestartAgent:
            underWay()
        default: break
        }
        // Registered before the request runs, so that shutdown waits for its callback too.
        let ticket = request.callback.map { callbacks.expect($0, command: request.command.name) }
        if !request.wait { connection.finish(id: request.id, .completed(["accepted": true, "id": request.id])) }
        let result: ControlResult
        switch request.command {
        case .status:
            result = .completed(board.current.json)
        case .version:
            result = .completed(["satellite": .string(SatelliteVersion.satellite), "control": .number(Double(ControlProtocol.version)),
                                 "controlVersions": .array(ControlProtocol.versionsSpoken.map { .number(Double($0)) }),
                                 "parlourProtocol": .string(SatelliteVersion.parlourProtocol)])
        case .watch:
            startWatch(request.id, on: connection)
            return
        case .listen(let hold):
            // Under way once its turn is registered: an `end` after it on this connection then finds it.
            result = await listen(hold: hold, holder: connection, started: underWay)
        case .end:
            result = .completed(["released": .bool(await conversation.release())])
        case .cancel:
            result = .completed(["cancelled": .bool(await conversation.cancel())])
        case .ask(let text):
            result = await conversation.ask(text)
            bus.publish(.finished(command: "ask", result: result))
        case .servers:
            result = await chooser.servers()
        // The link and the token are never published: only the result, which holds neither.
        case .pair(let link, let key):
            result = await chooser.pair(link, key: key)
            tokenChanged()
            bus.publish(.finished(command: "pair", result: result))
        case .use(let url, let key):
            result = await chooser.use(url, key: key)
            bus.publish(.finished(command: "use", result: result))
        case .unpin:
            result = await chooser.unpin()
        case .tokenSet(let token):
            result = await chooser.setToken(token)
            tokenChanged()
        case .tokenClear:
            result = await chooser.clearToken()
            tokenChanged()
        case .room(nil):
            result = .completed(await settings.room())
        case .room(let name?):
            result = await settings.setRoom(name)
        case .roomReset:
            result = await settings.resetRoom()
        case .mute:
            result = await settings.setMuted(true)
        case .unmute:
            result = await settings.setMuted(false)
        case .volume(let percent):
            result = await volume.volume(setTo: percent)
            if percent != nil, case .completed(let now) = result {
                bus.notice(.notice, "The volume is now \(now["percent"]?.intValue ?? 0)%.",
                           ["card": volume.card, "control": now["control"]?.stringValue ?? volume.control])
            }
        case .serverStatus:
            result = await admin.status()
        case .serverService(let name, let action):
            result = await admin.service(name, action)
            bus.publish(.finished(command: request.command.name, result: result))
        case .serverPipeline(let change):
            result = await admin.pipeline(change)
            bus.publish(.finished(command: "server pipeline", result: result))
        case .serverDoctor:
            result = await admin.doctor()
        case .serverLogs(let service, let lines):
            result = await admin.logs(service, lines: lines)
        case .serverRestartAgent:
            result = await admin.restartAgent()
            bus.publish(.finished(command: "server restart-agent", result: result))
        case .doctor:
            result = .completed(await doctor.run().json)
        case .meter(let seconds, let processed):
            result = await meter(seconds, processed: processed, on: connection)
        }
        if request.wait { connection.finish(id: request.id, result) }
        if let ticket { callbacks.deliver(result, for: ticket) }
    }

    /// One turn, as `parlourctl listen` asks for it and as the local wake word starts it: its result
    /// is published for the journal and watch.
    public func listen(hold: Bool, holder: ControlConnection?, started: @Sendable () -> Void = {}) async -> ControlResult {
        let result = await conversation.listen(hold: hold, holder: holder, started: started)
        bus.publish(.finished(command: "listen", result: result))
        return result
    }

    /// Whether `peer` may run `command`; a changing command is logged with who sent it either way.
    private func admit(_ command: ControlCommand, from peer: AccessPolicy.Peer?) async -> Bool {
        guard command.needsControl else { return true }
        // getgrnam_r may ask nss (a file, LDAP): on the blocking thread, not the main loop.
        let group = await BlockingThread.local.run { Self.groupID() }
        let allowed = AccessPolicy.allows(command, peer: peer, daemonUID: getuid(), groupID: group)
        var fields = ["command": command.name]
        if let peer {
            fields["uid"] = String(peer.uid)
            fields["gid"] = String(peer.gid)
            fields["pid"] = String(peer.pid)
            if let user = peer.user { fields["user"] = user }
        }
        let who = peer?.description ?? "a peer the kernel did not name"
        if allowed {
            bus.notice(.info, "\(command.name) from \(who).", fields)
        } else {
            bus.notice(.warning, "Refused \(command.name) from \(who): only root, the daemon's own user and the "
                + "\(AccessPolicy.group) group may control the satellite.", fields)
        }
        return allowed
    }

    /// The gid of group `parlour` as it is now (an admin may create it after the daemon started).
    private static func groupID() -> UInt32? {
        var group = Glibc.group()
        var found: UnsafeMutablePointer<Glibc.group>?
        var buffer = [CChar](repeating: 0, count: 16 * 1024)
        guard getgrnam_r(AccessPolicy.group, &group, &buffer, buffer.count, &found) == 0, found != nil else { return nil }
        return group.gr_gid
    }

    public func readEnded(_ connection: ControlConnection) async {
        // A held listen ends when its holder goes: what was heard is still sent.
        _ = await conversation.release(from: connection)
        if let watch = watches.withLock({ $0.removeValue(forKey: ObjectIdentifier(connection)) }) {
            await end(watch, .cancelledByUser)
        }
    }

    /// `meter`: a `level` event every 100 ms for `seconds`, then the levels of the whole stretch.
    /// The microphone is listened in on through its actor, so a conversation keeps it.
    private func meter(_ seconds: Int, processed: Bool, on connection: ControlConnection) async -> ControlResult {
        if board.current.muted || keeper.state == .muted {
            return .failure(.muted, "The satellite is muted, so the microphone stays closed. Unmute it with parlourctl unmute.")
        }
        let chunks: AsyncStream<CaptureChunk>
        do {
            chunks = try await capture.listenIn(for: .seconds(seconds), processed: processed)
        } catch {
            return .failure(.microphoneUnavailable, "The microphone \(error.device) cannot be opened: \(error.reason).")
        }
        var meter = LevelMeter()
        for await chunk in chunks {
            switch chunk {
            case .samples(let samples):
                for level in meter.add(samples) {
                    guard case .object(var fields) = LevelMeter.event(level) else { continue }
                    fields["v"] = .number(Double(ControlProtocol.version))
                    connection.send(JSONValue.object(fields).text)
                }
            case .failed(let error):
                return .failure(.microphoneUnavailable, "The microphone \(error.device) failed while listening: \(error.reason).")
            }
        }
        return .completed(meter.result)
    }

    private func startWatch(_ id: JSONValue, on connection: ControlConnection) {
        connection.startStreaming()
        let events = bus.subscribe()
        // The first line says where things stand, and that every later event will be seen.
        connection.send(JSONValue.object(["v": .number(Double(ControlProtocol.version)), "event": "status",
                                          "message": .string(board.current.state.sentence(room: board.current.room)),
                                          "status": board.current.json]).text)
        let task = work.start {
            for await event in events {
                guard case .object(var fields) = event.json else { continue }
                fields["v"] = .number(Double(ControlProtocol.version))
                connection.send(JSONValue.object(fields).text)
            }
        }
        watches.withLock { $0[ObjectIdentifier(connection)] = Watch(task: task, id: id, connection: connection) }
    }

    /// Runs the watches until cancelled (shutdown); then each gets its one result, `shutting_down`.
    public func run() async {
        await work.run()
        await endWatches()
    }

    private func end(_ watch: Watch, _ reason: CancelReason) async {
        watch.task.cancel()
        await watch.task.wait()
        watch.connection.stopStreaming()
        watch.connection.finish(id: watch.id, .cancelled(reason))
    }

    /// Ends every watch with its one result, `cancelled` / `shutting_down`.
    public func endWatches() async {
        let all = watches.withLock { w in defer { w.removeAll() }; return Array(w.values) }
        for watch in all { await end(watch, .shuttingDown) }
    }
}
