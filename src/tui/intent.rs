//! What the user asks for ([`Action`]): the leaf every component may name, since keys, the
//! command line, the mouse and components' effects all speak it.

macro_rules! actions {
    ($($variant:ident = $name:literal,)*) => {
        /// Something the user asked for; keys map onto these through the key map.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Action {
            $(
                #[doc = $name]
                $variant,
            )*
        }

        impl Action {
            /// Every action, in key map order.
            pub const ALL: &'static [Action] = &[$(Action::$variant),*];

            /// The name used in key map files and on the `:` command line.
            pub fn name(self) -> &'static str {
                match self {
                    $(Action::$variant => $name,)*
                }
            }

            /// The action with this name.
            pub fn from_name(name: &str) -> Option<Action> {
                match name {
                    $($name => Some(Action::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

actions! {
    Quit = "quit",
    Help = "help",
    NextPane = "next_pane",
    PrevPane = "prev_pane",
    Up = "up",
    Down = "down",
    Left = "left",
    Right = "right",
    PageUp = "page_up",
    PageDown = "page_down",
    Top = "top",
    Bottom = "bottom",
    Open = "open",
    Back = "back",
    Filter = "filter",
    Command = "command",
    Refresh = "refresh",
    NewTimeline = "new_timeline",
    ParallelTimeline = "parallel_timeline",
    DeleteTimeline = "delete_timeline",
    AddEvent = "add_event",
    Manipulate = "manipulate",
    Revert = "revert",
    SetAnchor = "set_anchor",
    Travel = "travel",
    ReturnToAnchor = "return_to_anchor",
    RegisterItem = "register_item",
    CheckParadox = "check_paradox",
    Freeze = "freeze",
    ShowLog = "log",
    Journeys = "journeys",
    Isolations = "isolations",
    TimelineView = "timeline_view",
    PauseResume = "pause_resume",
    FastForward = "fast_forward",
    Rewind = "rewind",
    Anchors = "anchors",
    Diff = "diff",
    Merge = "merge",
    Review = "review",
    Isolate = "isolate",
    CorrectDissonance = "correct_dissonance",
    AccessControl = "access",
    Restrictions = "restrictions",
    Integrity = "integrity",
    LastMessage = "last_message",
}
