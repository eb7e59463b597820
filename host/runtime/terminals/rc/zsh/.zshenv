# agent-host shell integration for zsh: the host starts zsh with ZDOTDIR pointing here and
# AHP_USER_ZDOTDIR naming your own; your ~/.zshenv is read as usual, then zsh reads our .zshrc.
# The nonce that ends each mark (see .zshrc) leaves the environment before anything else runs.
__ahp_nonce=${AHP_TERMINAL_NONCE-}
unset AHP_TERMINAL_NONCE
__ahp_dir=$ZDOTDIR
ZDOTDIR=${AHP_USER_ZDOTDIR:-$HOME}
[[ -r $ZDOTDIR/.zshenv ]] && source "$ZDOTDIR/.zshenv"
AHP_USER_ZDOTDIR=$ZDOTDIR
ZDOTDIR=$__ahp_dir
unset __ahp_dir
