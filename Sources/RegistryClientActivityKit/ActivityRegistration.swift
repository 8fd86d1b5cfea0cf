#if canImport(ActivityKit)
import ActivityKit
import Foundation
import RegistryClient

/// Reports one ActivityKit attributes type's tokens to a `RegistryClient`:
/// its push-to-start tokens (iOS 17.2), and for every activity, running at
/// launch or started later (by the app or by a push-to-start push), its
/// update tokens and its end.
///
/// Each type is watched by its own call, and its push-to-start token is
/// keyed by the type's name, so two types never overwrite each other. The
/// activities of a user who signs out are not registered for the next one:
/// `RegistryClient.signedOut()` ends their registrations.
@available(iOS 16.2, macCatalyst 16.2, *)
public enum ActivityRegistration {
    /// Starts watching `Attributes`; runs until the returned task is
    /// cancelled. `activityId` names an activity on the server (the subject
    /// the backend pushes to, such as a match id).
    public static func watch<Attributes: ActivityAttributes>(
        _ type: Attributes.Type, registry: RegistryClient, environment: APNsEnvironment,
        activityId: @escaping @Sendable (Attributes) -> String
    ) -> Task<Void, Never> {
        Task {
            await withTaskGroup(of: Void.self) { group in
                if #available(iOS 17.2, macCatalyst 17.2, *) {
                    group.addTask {
                        let name = String(describing: Attributes.self)
                        for await token in Activity<Attributes>.pushToStartTokenUpdates {
                            registry.pushToStartTokenReceived(PushToken(apns: token, environment: environment),
                                                              attributesType: name)
                        }
                    }
                }
                for activity in Activity<Attributes>.activities {
                    let id = activityId(activity.attributes)
                    group.addTask { await follow(activity, id: id, registry: registry, environment: environment) }
                }
                for await activity in Activity<Attributes>.activityUpdates {
                    let id = activityId(activity.attributes)
                    group.addTask { await follow(activity, id: id, registry: registry, environment: environment) }
                }
            }
        }
    }

    /// One activity: its tokens until it ends or is dismissed.
    private static func follow<Attributes: ActivityAttributes>(
        _ activity: Activity<Attributes>, id: String, registry: RegistryClient, environment: APNsEnvironment
    ) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await token in activity.pushTokenUpdates {
                    registry.activityTokenReceived(activityId: id, token: PushToken(apns: token, environment: environment))
                }
            }
            group.addTask {
                for await state in activity.activityStateUpdates where state == .ended || state == .dismissed {
                    registry.activityEnded(activityId: id)
                    return
                }
            }
            await group.next()
            group.cancelAll()
        }
    }
}
#endif
