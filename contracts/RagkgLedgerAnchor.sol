// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @title Anchors of the ragkg knowledge change log
/// @notice Records signed tree heads (tree size, Merkle root) of the change log, an RFC 9162 Merkle tree.
/// Each tree size has at most one root, set once by the owner. Sending the same head again changes
/// nothing and succeeds, so a retried transaction is harmless; a different root for an anchored size
/// is refused, so an anchored head can never be rewritten.
contract RagkgLedgerAnchor {
    /// @notice The account allowed to anchor: the deployer.
    address public immutable owner;

    /// @notice The largest tree size anchored so far.
    uint64 public latestTreeSize;

    /// @notice The root anchored for a tree size; zero when none is.
    mapping(uint64 => bytes32) public rootAt;

    /// @notice A new head was anchored.
    event Anchored(uint64 indexed treeSize, bytes32 root);

    /// @notice The sender is not the owner.
    error NotOwner();
    /// @notice The tree size or the root is zero.
    error EmptyHead();
    /// @notice The tree size already has another root.
    error ConflictingRoot(uint64 treeSize, bytes32 anchored);

    constructor() {
        owner = msg.sender;
    }

    /// @notice Anchor the head (treeSize, root); a resend of an anchored head is a no-op.
    function anchor(uint64 treeSize, bytes32 root) external {
        if (msg.sender != owner) revert NotOwner();
        if (treeSize == 0 || root == bytes32(0)) revert EmptyHead();
        bytes32 anchored = rootAt[treeSize];
        if (anchored == root) return;
        if (anchored != bytes32(0)) revert ConflictingRoot(treeSize, anchored);
        rootAt[treeSize] = root;
        if (treeSize > latestTreeSize) latestTreeSize = treeSize;
        emit Anchored(treeSize, root);
    }
}
